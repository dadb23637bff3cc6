//! Whose quota a credential spends, per provider (PROVIDER-FACTS.md, "Quota owner"): the exit
//! door asks each provider its own way and names the owner the provider counts — Linear's
//! user (`viewer`), LaunchDarkly's account (`caller-identity`), Jira's site for API tokens and
//! the OAuth app for points — so two credentials of one owner land on one governor state, and
//! two owners never do. The transport answers with the documented shapes and records what was
//! sent, so the test also sees each probe's path, method and authorization header.

#![allow(clippy::expect_used)]

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::signal::Provider;
use headroom_core::{Governor, QuotaKey, Subject};
use headroom_http::{
    ApiError, AuthScheme, Client, ClientParts, Credential, Transport, TransportError, UrlPolicy,
};
use serde_json::{Value, json};

/// What was sent: method, path, the authorization header (or `PRIVATE-TOKEN`), the body.
type Sent = (String, String, String, String);

/// Answers a provider's "who am I" for a token table: token → owner fields.
#[derive(Debug)]
struct WhoAmI {
    answers: Vec<(&'static str, Value)>,
    sent: Mutex<Vec<Sent>>,
}

impl WhoAmI {
    fn answer(&self, auth: &str) -> Option<Value> {
        self.answers
            .iter()
            .find(|(token, _)| auth.ends_with(token) || auth.contains(&b64(token)))
            .map(|(_, body)| body.clone())
    }
}

fn b64(token: &str) -> String {
    use base64::Engine as _;
    // Jira's Basic carries `email:token`; the test's e-mails are all `me@example.com`.
    base64::engine::general_purpose::STANDARD.encode(format!("me@example.com:{token}"))
}

impl Transport for WhoAmI {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            let header = |name: &str| {
                request
                    .headers()
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned()
            };
            let auth = match header("private-token") {
                t if !t.is_empty() => t,
                _ => header("authorization"),
            };
            self.sent.lock().expect("lock").push((
                request.method().to_string(),
                request.uri().path().to_owned(),
                auth.clone(),
                String::from_utf8_lossy(request.body()).into_owned(),
            ));
            let (status, body) = match self.answer(&auth) {
                Some(body) => (200, body),
                None => (401, json!({"message": "unauthorized"})),
            };
            Ok(http::Response::builder()
                .status(status)
                .header("content-type", "application/json")
                .body(Bytes::from(body.to_string()))
                .expect("valid"))
        })
    }
}

fn door(
    provider: Provider,
    base: &str,
    answers: Vec<(&'static str, Value)>,
) -> (Client, Arc<WhoAmI>) {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let governor = Governor::in_memory(GovernorConfig::for_provider(provider), Arc::new(clock))
        .expect("valid");
    let transport = Arc::new(WhoAmI {
        answers,
        sent: Mutex::new(Vec::new()),
    });
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(base).expect("valid base"),
        governor,
        transport.clone(),
        clock,
    );
    parts.config.provider = provider;
    parts.config.jitter_seed = Some(3);
    (Client::new(parts), transport)
}

async fn owner(client: &Client, credential: &Credential) -> Result<QuotaKey, ApiError> {
    client.identity(Some(credential)).await
}

#[tokio::test]
async fn linear_counts_the_viewer_and_two_keys_of_one_user_share_it() {
    let viewer = |id: &str| json!({"data": {"viewer": {"id": id, "name": "N", "email": "e"}}});
    let (client, sent) = door(
        Provider::Linear,
        "https://api.linear.app",
        vec![
            ("lin_api_one", viewer("user-1")),
            ("lin_api_two", viewer("user-1")),
            ("lin_api_other", viewer("user-2")),
        ],
    );
    let one = owner(&client, &Credential::new("lin_api_one"))
        .await
        .expect("known");
    let two = owner(&client, &Credential::new("lin_api_two"))
        .await
        .expect("known");
    let other = owner(&client, &Credential::new("lin_api_other"))
        .await
        .expect("known");
    assert_eq!(one.subject, Subject::User("user-1".into()));
    assert_eq!(one, two, "two keys of one user are one quota");
    assert_ne!(one, other);
    assert_eq!(one.provider, Provider::Linear);
    let sent = sent.sent.lock().expect("lock").clone();
    let (method, path, auth, body) = &sent[0];
    assert_eq!((method.as_str(), path.as_str()), ("POST", "/graphql"));
    assert_eq!(auth, "lin_api_one", "Linear's key goes raw, without Bearer");
    assert!(body.contains("viewer"), "{body}");
    // Known owners are asked once.
    owner(&client, &Credential::new("lin_api_one"))
        .await
        .expect("known");
    assert_eq!(sent.len(), 3);
}

#[tokio::test]
async fn launchdarkly_counts_the_account_whatever_member_or_service_token_calls() {
    let caller = |account: &str, member: Value, kind: &str| json!({"accountId": account, "memberId": member, "tokenKind": kind, "serviceToken": kind == "service"});
    let (client, sent) = door(
        Provider::LaunchDarkly,
        "https://app.launchdarkly.com",
        vec![
            ("api-alice", caller("acct-1", json!("m-alice"), "personal")),
            ("api-bob", caller("acct-1", json!("m-bob"), "personal")),
            ("api-svc", caller("acct-1", Value::Null, "service")),
            ("api-else", caller("acct-2", json!("m-x"), "personal")),
        ],
    );
    let alice = owner(&client, &Credential::new("api-alice"))
        .await
        .expect("known");
    assert_eq!(alice.subject, Subject::Account("acct-1".into()));
    for token in ["api-bob", "api-svc"] {
        let key = owner(&client, &Credential::new(token))
            .await
            .expect("known");
        assert_eq!(key, alice, "{token}: one account, one quota");
    }
    let other = owner(&client, &Credential::new("api-else"))
        .await
        .expect("known");
    assert_ne!(other, alice);
    let sent = sent.sent.lock().expect("lock").clone();
    assert_eq!(sent[0].1, "/api/v2/caller-identity");
    assert_eq!(sent[0].2, "api-alice", "the raw token in Authorization");
}

#[tokio::test]
async fn jira_api_tokens_of_two_users_share_the_site_and_an_oauth_token_spends_its_app() {
    let me = |account: &str| json!({"accountId": account, "accountType": "atlassian"});
    let answers = vec![
        ("tok-ann", me("5b10-ann")),
        ("tok-ben", me("5b10-ben")),
        ("oauth-1", me("5b10-ann")),
        ("oauth-2", me("5b10-ben")),
    ];
    let (site, sent) = door(
        Provider::Jira,
        "https://acme.atlassian.net",
        answers.clone(),
    );
    let basic = |token: &str| {
        Credential::with_scheme(
            token,
            AuthScheme::Basic {
                user: "me@example.com".into(),
            },
        )
    };
    let ann = owner(&site, &basic("tok-ann")).await.expect("known");
    let ben = owner(&site, &basic("tok-ben")).await.expect("known");
    assert_eq!(ann.subject, Subject::Site("acme.atlassian.net".into()));
    assert_eq!(
        ann, ben,
        "API-token traffic of one site shares its burst buckets"
    );
    {
        let sent = sent.sent.lock().expect("lock");
        assert_eq!(sent[0].1, "/rest/api/3/myself");
        assert!(sent[0].2.starts_with("Basic "), "{}", sent[0].2);
    }
    // A token Jira refuses names no owner: the site is not assumed.
    assert!(owner(&site, &basic("tok-wrong")).await.is_err());

    let (platform, _) = door(Provider::Jira, "https://api.atlassian.com", answers);
    let app = Credential::with_scheme(
        "oauth-1",
        AuthScheme::AppBearer {
            client_id: "client-9".into(),
        },
    );
    let key = owner(&platform, &app).await.expect("known");
    assert_eq!(key.subject, Subject::App("client-9".into()));
    // Without its app, an OAuth token's owner is unknown: refused rather than guessed.
    let bare = Credential::with_scheme("oauth-2", AuthScheme::Bearer);
    let err = owner(&platform, &bare).await.expect_err("no app");
    assert!(err.to_string().contains("JIRA_OAUTH_CLIENT_ID"), "{err}");
}

/// The provider is the oracle: the question each door asks and the field it reads the owner
/// from are in the provider's published description — Linear's `viewer` document validates
/// against its schema, Jira's `myself` answers a `User` with `accountId`, LaunchDarkly's
/// `caller-identity` a `CallerIdentityRep` with `accountId`. Read from `../shared/oracles`
/// (a reported skip without them, a failure under CI).
#[tokio::test]
async fn every_who_am_i_asks_and_reads_what_its_provider_publishes() {
    let test = "every_who_am_i_asks_and_reads_what_its_provider_publishes";
    let (Some(schema), Some(jira), Some(ld)) = (
        headroom_testkit::oracles::read(test, "linear/schema.graphql"),
        headroom_testkit::oracles::read(test, "jira/jira-platform-v3.json"),
        headroom_testkit::oracles::read(test, "launchdarkly/ld-openapi.json"),
    ) else {
        return;
    };
    // The document the Linear door sent, validated as Linear would.
    let viewer = json!({"data": {"viewer": {"id": "u-1"}}});
    let (client, sent) = door(
        Provider::Linear,
        "https://api.linear.app",
        vec![("lin_api_one", viewer)],
    );
    owner(&client, &Credential::new("lin_api_one"))
        .await
        .expect("known");
    let body: Value =
        serde_json::from_str(&sent.sent.lock().expect("lock")[0].3).expect("a JSON body");
    let document = body["query"].as_str().expect("a query");
    let schema = apollo_compiler::Schema::parse_and_validate(schema, "linear/schema.graphql")
        .expect("Linear's schema");
    apollo_compiler::ExecutableDocument::parse_and_validate(&schema, document, "viewer.graphql")
        .expect("the viewer document is valid against Linear's schema");

    // The REST answers' documented schemas carry the field read.
    let answer_has = |spec: &str, path: &str, field: &str| {
        let spec: Value = serde_json::from_str(spec).expect("a JSON description");
        let schema = &spec["paths"][path]["get"]["responses"]["200"]["content"]["application/json"]
            ["schema"]["$ref"];
        let name = schema
            .as_str()
            .and_then(|r| r.rsplit('/').next())
            .expect("a named schema");
        assert!(
            spec["components"]["schemas"][name]["properties"]
                .get(field)
                .is_some(),
            "{path}: {name} has no {field}"
        );
    };
    answer_has(&jira, "/rest/api/3/myself", "accountId");
    answer_has(&ld, "/api/v2/caller-identity", "accountId");
}
