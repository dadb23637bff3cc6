//! Who a provider counts a credential's requests against (PROVIDER-FACTS.md, "Who am I" and
//! "Quota owner"): the request that asks, and how its answer names the quota's owner.
//!
//! GitHub and GitLab count the user (`GET /user`: `login`, `username`); Linear the user too
//! (`viewer { id }`); LaunchDarkly the account (`GET /api/v2/caller-identity`: `accountId`),
//! whatever member or service token calls. Jira counts API-token traffic against the site, so
//! two users' tokens there are one owner; an OAuth app's points are the app's. Jira's
//! `GET /rest/api/3/myself` is still asked: it proves the credential before any work relies on
//! it. Pure: the client sends the request and hands the answer back here.

use headroom_core::signal::{LINEAR_COMPLEXITY, LINEAR_REQUESTS, Provider};
use headroom_core::{Bucket, Subject};
use serde_json::Value;

use crate::credential::AuthScheme;
use crate::error::ApiError;
use crate::request::ApiRequest;

/// Linear's smallest question with the user in its answer.
const LINEAR_VIEWER: &str = "query HeadroomViewer { viewer { id } }";

/// The request that tells whose quota a credential of `provider` spends.
pub(super) fn probe(provider: Provider) -> Result<ApiRequest, ApiError> {
    Ok(match provider {
        Provider::GitHub | Provider::GitLab => ApiRequest::get("/user"),
        Provider::Jira => ApiRequest::get("/rest/api/3/myself"),
        Provider::LaunchDarkly => ApiRequest::get("/api/v2/caller-identity"),
        // Linear meters a request twice: one from its requests bucket, and the document's
        // complexity (an object and a scalar: 1.1, charged as 1) from the other.
        Provider::Linear => {
            let mut request =
                ApiRequest::graphql(LINEAR_VIEWER, &Value::Object(Default::default()))?
                    .bucket(Bucket::new(LINEAR_REQUESTS))
                    .also_spends(Bucket::new(LINEAR_COMPLEXITY), 1);
            request.estimated_cost = 1;
            request
        }
    })
}

/// The owner known without a probe: a Jira app's token on the gateway's root (before a site's
/// cloudId is known), where no `/myself` answers. Its points are the app's whatever it reaches.
pub(super) fn known_owner(
    provider: Provider,
    scheme: &AuthScheme,
    base: &url::Url,
) -> Option<Subject> {
    match (provider, scheme) {
        (Provider::Jira, AuthScheme::AppBearer { client_id })
            if !base.path().starts_with("/ex/jira/") =>
        {
            Some(Subject::App(client_id.clone()))
        }
        _ => None,
    }
}

/// The owner the probe's answer `body` names, for a credential presented as `scheme` to the
/// API on `host`; an error says what the answer lacked.
pub(super) fn owner(
    provider: Provider,
    scheme: &AuthScheme,
    host: &str,
    body: &Value,
) -> Result<Subject, String> {
    let text = |pointer: &str, what: &str| {
        body.pointer(pointer)
            .and_then(Value::as_str)
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .ok_or_else(|| format!("{what} returned no {}", pointer.trim_start_matches('/')))
    };
    match provider {
        Provider::GitHub => Ok(Subject::User(text("/login", "GET /user")?.into())),
        Provider::GitLab => Ok(Subject::User(text("/username", "GET /user")?.into())),
        Provider::Linear => Ok(Subject::User(
            text("/data/viewer/id", "the viewer query")?.into(),
        )),
        Provider::LaunchDarkly => Ok(Subject::Account(
            text("/accountId", "GET /api/v2/caller-identity")?.into(),
        )),
        Provider::Jira => {
            // Proves the credential is an account's; the owner is not the account.
            text("/accountId", "GET /rest/api/3/myself")?;
            match scheme {
                AuthScheme::AppBearer { client_id } => Ok(Subject::App(client_id.clone())),
                AuthScheme::Bearer => Err("a Jira OAuth token spends its app's points: name the \
                                           app's client id (JIRA_OAUTH_CLIENT_ID)"
                    .to_owned()),
                AuthScheme::Basic { .. } | AuthScheme::ProviderDefault => {
                    Ok(Subject::Site(host.into()))
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn basic() -> AuthScheme {
        AuthScheme::Basic {
            user: "a@example.com".into(),
        }
    }

    #[test]
    fn each_provider_names_the_owner_it_counts() {
        let d = AuthScheme::ProviderDefault;
        let user = |s: &str| Subject::User(s.into());
        assert_eq!(
            owner(
                Provider::GitHub,
                &d,
                "api.github.com",
                &json!({"login": "alice"})
            ),
            Ok(user("alice"))
        );
        assert_eq!(
            owner(
                Provider::GitLab,
                &d,
                "gitlab.com",
                &json!({"username": "bob", "login": "x"})
            ),
            Ok(user("bob"))
        );
        let viewer = json!({"data": {"viewer": {"id": "8f1c-user", "name": "C"}}});
        assert_eq!(
            owner(Provider::Linear, &d, "api.linear.app", &viewer),
            Ok(user("8f1c-user"))
        );
        let caller = json!({"accountId": "acct-1", "tokenKind": "service", "memberId": null});
        assert_eq!(
            owner(Provider::LaunchDarkly, &d, "app.launchdarkly.com", &caller),
            Ok(Subject::Account("acct-1".into()))
        );
        let me = json!({"accountId": "5b10ac8d82e05b22cc7d4ef5", "accountType": "atlassian"});
        assert_eq!(
            owner(Provider::Jira, &basic(), "acme.atlassian.net", &me),
            Ok(Subject::Site("acme.atlassian.net".into()))
        );
        let app = AuthScheme::AppBearer {
            client_id: "client-9".into(),
        };
        assert_eq!(
            owner(Provider::Jira, &app, "api.atlassian.com", &me),
            Ok(Subject::App("client-9".into()))
        );
    }

    #[test]
    fn an_answer_without_the_owner_is_an_error_naming_the_field() {
        let d = AuthScheme::ProviderDefault;
        let err = owner(Provider::LaunchDarkly, &d, "h", &json!({"memberId": "m"})).expect_err("x");
        assert!(err.contains("accountId"), "{err}");
        let err = owner(
            Provider::Linear,
            &d,
            "h",
            &json!({"errors": [{"message": "no"}]}),
        )
        .expect_err("no viewer");
        assert!(err.contains("data/viewer/id"), "{err}");
        // A Jira answer must name an account even though the site owns the quota.
        assert!(owner(Provider::Jira, &basic(), "h", &json!({})).is_err());
        // A bare OAuth token on Jira has no app to charge: refused, not guessed.
        let err = owner(
            Provider::Jira,
            &AuthScheme::Bearer,
            "h",
            &json!({"accountId": "a"}),
        )
        .expect_err("no app");
        assert!(err.contains("JIRA_OAUTH_CLIENT_ID"), "{err}");
        assert!(owner(Provider::GitHub, &d, "h", &json!({"login": ""})).is_err());
    }

    #[test]
    fn every_provider_has_a_probe() {
        let path = |p| probe(p).map(|r| (r.method.to_string(), r.target));
        assert_eq!(path(Provider::Linear).expect("ok").0, "POST");
        assert_eq!(path(Provider::Linear).expect("ok").1, "/graphql");
        assert_eq!(
            path(Provider::LaunchDarkly).expect("ok").1,
            "/api/v2/caller-identity"
        );
        assert_eq!(path(Provider::Jira).expect("ok").1, "/rest/api/3/myself");
        assert_eq!(path(Provider::GitLab).expect("ok").1, "/user");
    }

    fn any_json() -> impl Strategy<Value = Value> {
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(|n| json!(n)),
            "[a-z0-9-]{0,8}".prop_map(Value::String),
        ];
        leaf.prop_recursive(3, 24, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                prop::collection::btree_map(
                    prop_oneof![
                        Just("login".to_owned()),
                        Just("username".to_owned()),
                        Just("accountId".to_owned()),
                        Just("data".to_owned()),
                        Just("viewer".to_owned()),
                        Just("id".to_owned()),
                        "[a-z]{1,6}"
                    ],
                    inner,
                    0..4
                )
                .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest! {
        /// Whatever a provider answers, the owner is either a non-empty name taken from the
        /// field the provider documents, or an error: never a panic, never an empty owner.
        #[test]
        fn any_answer_gives_a_named_owner_or_an_error(body in any_json()) {
            for provider in [Provider::GitHub, Provider::GitLab, Provider::Linear,
                             Provider::LaunchDarkly, Provider::Jira] {
                if let Ok(subject) = owner(provider, &basic(), "site.example", &body) {
                    let name = match &subject {
                        Subject::User(s) | Subject::Account(s) | Subject::Site(s)
                        | Subject::App(s) | Subject::Ip(s) => s.to_string(),
                        Subject::Installation(id) => id.to_string(),
                    };
                    prop_assert!(!name.is_empty());
                    let field = match provider {
                        Provider::GitHub => "/login",
                        Provider::GitLab => "/username",
                        Provider::Linear => "/data/viewer/id",
                        Provider::LaunchDarkly | Provider::Jira => "/accountId",
                    };
                    prop_assert!(body.pointer(field).and_then(Value::as_str).is_some());
                }
            }
        }
    }
}
