//! What differs on the wire between providers, beside the rate-limit headers the core
//! parses: the default headers, the credential's header, what a GitLab 403 means, and a GitLab read's wait in place after a 429.
//!
//! GitHub gets its media type and API version; GitLab gets neither (they mean nothing there)
//! and its `PRIVATE-TOKEN` header. A GitLab.com response carries `RateLimit-*` headers on
//! every answer, so a 403 with those headers is still a permission refusal unless they say the
//! quota is spent or a `Retry-After` comes with it.

use headroom_core::clock::{Clock as _, SignedDuration, Timestamp};
use headroom_core::signal::{Provider, RateLimitSignal, WaitBounds};
use http::header::{ACCEPT, AUTHORIZATION};
use http::{HeaderMap, HeaderValue};

use headroom_core::QuotaKey;
use headroom_core::retry::Failure;

use super::Client;
use crate::credential::{AuthScheme, Credential};
use crate::error::ApiError;
use crate::request::ApiRequest;

/// The provider's default headers (`Accept`, GitHub's API version).
pub(super) fn default_headers(
    provider: Provider,
    api_version: Option<&str>,
    headers: &mut HeaderMap,
) {
    match provider {
        Provider::GitHub => {
            headers.insert(
                ACCEPT,
                HeaderValue::from_static("application/vnd.github+json"),
            );
            if let Some(version) = api_version.and_then(|v| HeaderValue::from_str(v).ok()) {
                headers.insert("x-github-api-version", version);
            }
        }
        Provider::LaunchDarkly => {
            headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
            // Pinned so that paging defaults do not depend on the token's own version [ld-api].
            headers.insert(
                "ld-api-version",
                HeaderValue::from_static(LAUNCHDARKLY_API_VERSION),
            );
        }
        Provider::GitLab | Provider::Jira | Provider::Linear => {
            headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        }
    }
}

/// The LaunchDarkly REST API version every request names.
pub const LAUNCHDARKLY_API_VERSION: &str = "20240415";

/// The credential's header, by its scheme and the provider's convention for a personal token:
/// `PRIVATE-TOKEN` on GitLab, the raw token in `Authorization` on Linear and LaunchDarkly,
/// `Authorization: Bearer` on GitHub (and for every OAuth token), `Basic` for Jira's e-mail
/// and API token. Marked sensitive so no header dump shows it.
pub(super) fn credential_header(
    provider: Provider,
    credential: &Credential,
    headers: &mut HeaderMap,
) -> Result<(), ApiError> {
    let refused =
        || ApiError::Identity("the token contains characters not allowed in a header".into());
    let (name, value) = match (credential.scheme(), provider) {
        (AuthScheme::Bearer | AuthScheme::AppBearer { .. }, _) => {
            (AUTHORIZATION.as_str(), credential.bearer())
        }
        (AuthScheme::Basic { user }, _) => (AUTHORIZATION.as_str(), credential.basic(user)),
        (AuthScheme::ProviderDefault, Provider::GitLab) => {
            ("private-token", credential.token().to_owned())
        }
        (AuthScheme::ProviderDefault, Provider::Linear | Provider::LaunchDarkly) => {
            (AUTHORIZATION.as_str(), credential.token().to_owned())
        }
        (AuthScheme::ProviderDefault, Provider::Jira) => {
            return Err(ApiError::Identity(
                "a Jira API token needs the account's e-mail (JIRA_EMAIL) to be sent as Basic"
                    .into(),
            ));
        }
        (AuthScheme::ProviderDefault, Provider::GitHub) => {
            (AUTHORIZATION.as_str(), credential.bearer())
        }
    };
    let mut value = HeaderValue::from_str(&value).map_err(|_| refused())?;
    value.set_sensitive(true);
    headers.insert(name, value);
    Ok(())
}

/// How long a wait of `until` may be spent in place: all of it when it fits within the
/// in-place cap; `None` means defer instead.
pub(super) fn fits_in_place(
    until: Timestamp,
    now: Timestamp,
    bounds: &WaitBounds,
) -> Option<SignedDuration> {
    let wait = until.duration_since(now);
    (wait <= bounds.max_in_place_wait).then(|| bounds.in_place(wait))
}

impl Client {
    /// A GitLab read answered 429 waits in place before its retry — until the instant the
    /// governor (fed the reading) or, failing it, GitLab announced — when that fits the cap and
    /// the read has attempts left. `None`: defer (every other provider, status and kind).
    pub(super) async fn wait_in_place(
        &self,
        key: &QuotaKey,
        request: &ApiRequest,
        status: u16,
        signal: &RateLimitSignal,
        attempts: u32,
    ) -> Option<SignedDuration> {
        let parts = self.parts();
        let failure = Failure::Status {
            status,
            rate_limit_remaining_zero: signal.remaining == Some(0),
        };
        if parts.config.provider != Provider::GitLab
            || status != 429
            || !self.should_retry(request.kind, failure, attempts)
        {
            return None;
        }
        let (until, _, _) = self.come_back_at(key, request, signal).await;
        fits_in_place(until, parts.clock.now(), &parts.config.bounds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gitlab_gets_no_github_headers_and_its_own_token_header() {
        let mut headers = HeaderMap::new();
        default_headers(Provider::GitLab, Some("2022-11-28"), &mut headers);
        credential_header(
            Provider::GitLab,
            &Credential::new("glpat-secret"),
            &mut headers,
        )
        .expect("valid");
        assert_eq!(headers.get(ACCEPT).expect("accept"), "application/json");
        assert!(headers.get("x-github-api-version").is_none());
        assert!(headers.get(AUTHORIZATION).is_none());
        assert_eq!(headers.get("private-token").expect("token"), "glpat-secret");
        assert!(headers.get("private-token").expect("token").is_sensitive());

        let mut github = HeaderMap::new();
        default_headers(Provider::GitHub, Some("2022-11-28"), &mut github);
        credential_header(Provider::GitHub, &Credential::new("ghp_x"), &mut github).expect("ok");
        assert_eq!(
            github.get(ACCEPT).expect("accept"),
            "application/vnd.github+json"
        );
        assert_eq!(github.get("x-github-api-version").expect("v"), "2022-11-28");
        assert_eq!(github.get(AUTHORIZATION).expect("auth"), "Bearer ghp_x");
    }

    /// Each provider's personal token in its own header and form (PROVIDER-FACTS.md,
    /// Authentication), and every OAuth token as Bearer.
    #[test]
    fn every_provider_gets_its_token_in_its_own_form() {
        let header = |provider, credential: &Credential| {
            let mut headers = HeaderMap::new();
            default_headers(provider, None, &mut headers);
            credential_header(provider, credential, &mut headers).map(|()| headers)
        };
        let linear = header(Provider::Linear, &Credential::new("lin_api_k")).expect("ok");
        assert_eq!(linear.get(AUTHORIZATION).expect("auth"), "lin_api_k");
        let ld = header(Provider::LaunchDarkly, &Credential::new("api-x")).expect("ok");
        assert_eq!(ld.get(AUTHORIZATION).expect("auth"), "api-x");
        assert_eq!(ld.get("ld-api-version").expect("version"), "20240415");
        let jira = Credential::with_scheme(
            "tok",
            AuthScheme::Basic {
                user: "a@b.c".into(),
            },
        );
        let jira = header(Provider::Jira, &jira).expect("ok");
        assert_eq!(jira.get(AUTHORIZATION).expect("auth"), "Basic YUBiLmM6dG9r");
        assert!(jira.get(AUTHORIZATION).expect("auth").is_sensitive());
        // A Jira token without its e-mail cannot be sent: refused, not sent as Bearer.
        assert!(header(Provider::Jira, &Credential::new("tok")).is_err());
        for provider in [
            Provider::GitHub,
            Provider::GitLab,
            Provider::Jira,
            Provider::Linear,
            Provider::LaunchDarkly,
        ] {
            let app = AuthScheme::AppBearer {
                client_id: "client-9".into(),
            };
            for scheme in [AuthScheme::Bearer, app] {
                let oauth = Credential::with_scheme("oauth-t", scheme);
                let headers = header(provider, &oauth).expect("ok");
                assert_eq!(headers.get(AUTHORIZATION).expect("auth"), "Bearer oauth-t");
                assert!(headers.get("private-token").is_none());
            }
        }
    }

    #[test]
    fn a_wait_is_spent_in_place_only_within_the_cap() {
        let now = Timestamp::from_second(1_800_000_000).expect("valid");
        let bounds = WaitBounds::default();
        let later = |secs| now + SignedDuration::from_secs(secs);
        assert_eq!(
            fits_in_place(later(20), now, &bounds),
            Some(SignedDuration::from_secs(20))
        );
        assert_eq!(
            fits_in_place(later(300), now, &bounds),
            Some(SignedDuration::from_secs(300))
        );
        assert_eq!(fits_in_place(later(301), now, &bounds), None);
    }
}
