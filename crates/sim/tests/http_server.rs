//! The handler behind a real HTTP(S) server on 127.0.0.1, driven by an ordinary HTTP client.

use std::time::Duration;

use headroom_core::clock::TokioClock;
use headroom_sim::{SimConfig, Simulator, TlsConfig, TokenSpec, serve};
use tokio::net::TcpListener;
use tokio::sync::oneshot;

fn config() -> SimConfig {
    SimConfig::default()
        .with_org("acme", 4)
        .with_token(TokenSpec::user("t1", "alice"))
        .with_token(TokenSpec::user("t2", "alice"))
}

async fn start(
    tls: Option<TlsConfig>,
) -> (String, oneshot::Sender<()>, tokio::task::JoinHandle<()>) {
    let sim = Simulator::new(config(), TokioClock::system()).expect("valid config");
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("address");
    let scheme = if tls.is_some() { "https" } else { "http" };
    let (stop, stopped) = oneshot::channel::<()>();
    let server = tokio::spawn(async move {
        serve(sim, listener, tls, async {
            let _ = stopped.await;
        })
        .await
        .expect("server ran");
    });
    (format!("{scheme}://{addr}"), stop, server)
}

#[tokio::test]
async fn an_ordinary_client_crawls_over_http() {
    let (base, stop, server) = start(None).await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .redirect(reqwest::redirect::Policy::none())
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let r = client
        .get(format!("{base}/user"))
        .header("authorization", "token t1")
        .send()
        .await
        .expect("response");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-ratelimit-resource"], "core");
    assert_eq!(r.headers()["x-ratelimit-used"], "1");
    let me: serde_json::Value = r.json().await.expect("json");
    assert_eq!(me["login"], "alice");
    assert!(
        me["url"].as_str().is_some_and(|u| u.starts_with(&base)),
        "bodies point back here: {}",
        me["url"]
    );

    // Link pagination leads back to this server.
    let r = client
        .get(format!("{base}/orgs/acme/repos?per_page=3"))
        .header("authorization", "Bearer t2")
        .send()
        .await
        .expect("response");
    assert_eq!(
        r.headers()["x-ratelimit-used"],
        "2",
        "t2 shares alice's quota"
    );
    let link = r.headers()["link"].to_str().expect("ascii").to_owned();
    assert!(
        link.contains(&format!(
            "<{base}/orgs/acme/repos?per_page=3&page=2>; rel=\"next\""
        )),
        "{link}"
    );
    let next = client
        .get(format!("{base}/orgs/acme/repos?per_page=3&page=2"))
        .send()
        .await
        .expect("response");
    let page: Vec<serde_json::Value> = next.json().await.expect("json");
    assert_eq!(page.len(), 1);

    // GraphQL over HTTP.
    let r = client
        .post(format!("{base}/graphql"))
        .header("authorization", "bearer t1")
        .json(&serde_json::json!({"query": "{ rateLimit { cost remaining } organization(login: \"acme\") { repositories(first: 10) { totalCount } } }"}))
        .send()
        .await
        .expect("response");
    let b: serde_json::Value = r.json().await.expect("json");
    assert_eq!(b["data"]["organization"]["repositories"]["totalCount"], 4);
    assert_eq!(b["data"]["rateLimit"]["cost"], 1);

    // A 304 over the wire.
    let r = client
        .get(format!("{base}/events"))
        .header("authorization", "token t1")
        .send()
        .await
        .expect("response");
    let etag = r.headers()["etag"].to_str().expect("ascii").to_owned();
    let r = client
        .get(format!("{base}/events"))
        .header("authorization", "token t1")
        .header("if-none-match", etag)
        .send()
        .await
        .expect("response");
    assert_eq!(r.status(), 304);
    assert_eq!(r.headers()["x-poll-interval"], "60");

    let _ = stop.send(());
    server.await.expect("server stopped");
}

#[tokio::test]
async fn https_with_a_generated_self_signed_certificate() {
    let dir = std::env::temp_dir().join(format!("headroom-sim-tls-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let generated = TlsConfig::self_signed(&dir).expect("certificate");
    assert!(generated.cert_path.exists() && generated.key_path.exists());
    let (base, stop, server) = start(Some(generated.tls.clone())).await;
    assert!(base.starts_with("https://127.0.0.1:"));
    let pem = std::fs::read(&generated.cert_path).expect("cert file");
    let certs = reqwest::Certificate::from_pem_bundle(&pem).expect("PEM");
    let client = reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only(certs)
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let r = client
        .get(format!("{base}/rate_limit"))
        .header("authorization", "token t1")
        .send()
        .await
        .expect("an HTTPS response");
    assert_eq!(r.status(), 200);
    let b: serde_json::Value = r.json().await.expect("json");
    assert_eq!(b["resources"]["core"]["limit"], 5000);
    // A client that does not trust the certificate is refused.
    let untrusting = reqwest::Client::builder()
        .no_proxy()
        .tls_certs_only(Vec::new())
        .build()
        .expect("client");
    assert!(
        untrusting
            .get(format!("{base}/rate_limit"))
            .send()
            .await
            .is_err()
    );
    let _ = stop.send(());
    server.await.expect("server stopped");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn gitlab_is_served_under_api_v4_on_the_same_port() {
    let (base, stop, server) = start(None).await;
    let client = reqwest::Client::builder()
        .no_proxy()
        .timeout(Duration::from_secs(10))
        .build()
        .expect("client");
    let r = client
        .post(format!("{base}/api/v4/projects"))
        .header("private-token", "t1")
        .json(&serde_json::json!({"name": "widgets", "initialize_with_readme": true}))
        .send()
        .await
        .expect("response");
    assert_eq!(r.status(), 201);
    assert_eq!(r.headers()["ratelimit-name"], "throttle_authenticated_api");
    let project: serde_json::Value = r.json().await.expect("json");
    assert_eq!(project["web_url"], format!("{base}/alice/widgets"));
    let r = client
        .get(format!(
            "{base}/api/v4/projects/alice%2Fwidgets/repository/branches"
        ))
        .bearer_auth("t2")
        .send()
        .await
        .expect("response");
    assert_eq!(r.status(), 200);
    assert_eq!(r.headers()["x-total"], "1");
    // GitHub still answers beside it.
    let r = client
        .get(format!("{base}/user"))
        .header("authorization", "token t1")
        .send()
        .await
        .expect("response");
    assert_eq!(r.status(), 200);
    let _ = stop.send(());
    server.await.expect("server task");
}
