//! How a Jira OAuth app reaches its site: only through Atlassian's gateway
//! (`{gateway}/ex/jira/{cloudId}`), the site's cloudId listed by `accessible-resources`
//! (PROVIDER-FACTS.md, Jira, Authentication). An API token goes to the site itself, and a
//! site already named by its gateway URL is used as it is.

use headroom_core::SignedDuration;
use headroom_core::clock::TokioClock;
use headroom_core::signal::Provider;
use headroom_http::{AuthScheme, UrlPolicy};
use headroom_jira::gateway::{self, ATLASSIAN_GATEWAY};

use crate::config::Settings;
use crate::outcome::CliError;
use crate::registry::Opened;
use crate::wiring;

/// Whether `site` already names a site through the gateway.
fn is_gateway_url(site: &url::Url) -> bool {
    site.path().starts_with("/ex/jira/")
}

/// The gateway an app's token is sent to for `site`: Atlassian's, except for a loopback site,
/// whose simulator serves the gateway on its own host (so a test never sends a token out).
fn gateway_for(site: &url::Url) -> String {
    let loopback = site.host_str().is_some_and(|h| {
        h == "localhost"
            || h.parse::<std::net::IpAddr>()
                .is_ok_and(|ip| ip.is_loopback())
            || h == "[::1]"
    });
    if loopback {
        site.origin().ascii_serialization()
    } else {
        ATLASSIAN_GATEWAY.to_owned()
    }
}

/// `settings` (Jira's, resolved) with its policy moved to the site's gateway when the
/// credential is an OAuth app's; unchanged otherwise.
pub(crate) async fn through_gateway(
    settings: &Settings,
    clock: TokioClock,
    opened: &Opened,
    margin: SignedDuration,
) -> Result<Settings, CliError> {
    let Some(credential) = settings.credential.as_ref() else {
        return Ok(settings.clone());
    };
    let site = settings.policy.base().clone();
    if !matches!(credential.scheme(), AuthScheme::AppBearer { .. }) || is_gateway_url(&site) {
        return Ok(settings.clone());
    }
    let gateway = gateway_for(&site);
    let mut through = settings.clone();
    through.policy = UrlPolicy::for_api_url(&gateway)
        .map_err(|e| CliError::refused(&format!("Jira's gateway {gateway}: {e}")))?;
    let client = wiring::client_for(&through, clock, opened, margin, Provider::Jira)
        .map_err(|e| CliError::refused(&e))?;
    let base = gateway::gateway_base(&client, credential, &gateway, site.as_str())
        .await
        .map_err(|e| CliError::failed(&e))?;
    through.policy = UrlPolicy::for_api_url(&base)
        .map_err(|e| CliError::failed(&format!("Jira's gateway {base}: {e}")))?;
    Ok(through)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(text: &str) -> url::Url {
        url::Url::parse(text).expect("a URL")
    }

    #[test]
    fn an_apps_token_goes_to_atlassians_gateway_except_for_a_loopback_simulator() {
        assert_eq!(
            gateway_for(&url("https://acme.atlassian.net")),
            ATLASSIAN_GATEWAY
        );
        assert_eq!(
            gateway_for(&url("http://127.0.0.1:8787/")),
            "http://127.0.0.1:8787"
        );
        assert!(is_gateway_url(&url(
            "https://api.atlassian.com/ex/jira/1234-abcd"
        )));
        assert!(!is_gateway_url(&url("https://acme.atlassian.net")));
    }
}
