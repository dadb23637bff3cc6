//! Atlassian's API gateway for OAuth apps [jr-3lo]: an app's token reaches a site only as
//! `https://api.atlassian.com/ex/jira/{cloudId}`, and the `cloudId` of each site it may reach
//! comes from `GET /oauth/token/accessible-resources`. Which resource is the named site is
//! pure ([`cloud_id_of`]); the request goes through the exit door ([`gateway_base`]).

use headroom_core::provider::path;
use headroom_core::route;
use headroom_http::{ApiError, ApiRequest, Client, Credential};
use serde::Deserialize;

/// Where Atlassian's gateway answers by default.
pub const ATLASSIAN_GATEWAY: &str = "https://api.atlassian.com";

/// Where an OAuth token's sites are listed.
pub const ACCESSIBLE_RESOURCES: &str = "/oauth/token/accessible-resources";

/// One site an OAuth token reaches, as `accessible-resources` lists it.
#[derive(Debug, Clone, Deserialize, PartialEq, Eq)]
pub struct AccessibleResource {
    /// The site's cloudId.
    pub id: String,
    /// The site's URL (`https://acme.atlassian.net`).
    pub url: String,
    /// The site's name.
    #[serde(default)]
    pub name: String,
}

/// Why the named site's gateway could not be found.
#[derive(Debug, thiserror::Error)]
pub enum GatewayError {
    /// The gateway refused or failed the request.
    #[error("listing the sites the OAuth token reaches: {0}")]
    Request(#[from] ApiError),
    /// The listed cloudId cannot be a path segment (empty, or a dot segment).
    #[error("accessible-resources listed an unusable cloudId: {0}")]
    BadCloudId(#[from] headroom_core::provider::names::InvalidName),
    /// The token reaches no site of that URL.
    #[error(
        "the OAuth token reaches no site at {site}; it reaches: {reached} (check the site's URL, \
         and that the app is installed there)"
    )]
    NotReached {
        /// The site named.
        site: String,
        /// The sites it reaches, by URL.
        reached: String,
    },
}

/// A site's URL as compared: scheme and host in lower case, no trailing slash.
fn normalized(url: &str) -> String {
    url.trim().trim_end_matches('/').to_ascii_lowercase()
}

/// The `cloudId` of the resource whose URL is `site`, if the token reaches it.
pub fn cloud_id_of<'a>(resources: &'a [AccessibleResource], site: &str) -> Option<&'a str> {
    let want = normalized(site);
    resources
        .iter()
        .find(|r| normalized(&r.url) == want)
        .map(|r| r.id.as_str())
}

/// The gateway's base for `site`: `{gateway}/ex/jira/{cloudId}`, the `cloudId` listed for it by
/// `accessible-resources`, asked with `credential` through `client` (whose policy is the gateway's host). The
/// cloudId is a path segment, percent-encoded as one.
pub async fn gateway_base(
    client: &Client,
    credential: &Credential,
    gateway: &str,
    site: &str,
) -> Result<String, GatewayError> {
    let request = ApiRequest::get(ACCESSIBLE_RESOURCES)
        .route(route::JIRA_GATEWAY)
        .credential(Some(credential));
    let resources: Vec<AccessibleResource> = client.send(request).await?.json()?;
    let Some(id) = cloud_id_of(&resources, site) else {
        let reached: Vec<&str> = resources.iter().map(|r| r.url.as_str()).collect();
        return Err(GatewayError::NotReached {
            site: site.to_owned(),
            reached: if reached.is_empty() {
                "none".to_owned()
            } else {
                reached.join(", ")
            },
        });
    };
    Ok(format!(
        "{}/ex/jira/{}",
        gateway.trim_end_matches('/'),
        path::segment(id)?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn site(id: &str, url: &str) -> AccessibleResource {
        AccessibleResource {
            id: id.into(),
            url: url.into(),
            name: String::new(),
        }
    }

    #[test]
    fn the_named_site_is_found_by_its_url_whatever_its_case_or_trailing_slash() {
        let list = [
            site("11111111-aaaa", "https://other.atlassian.net"),
            site("22222222-bbbb", "https://Acme.atlassian.net"),
        ];
        assert_eq!(
            cloud_id_of(&list, "https://acme.atlassian.net/"),
            Some("22222222-bbbb")
        );
        assert_eq!(cloud_id_of(&list, "https://acme2.atlassian.net"), None);
    }
}
