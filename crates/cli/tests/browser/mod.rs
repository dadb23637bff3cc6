//! What the dashboard's browser tests share: Debian's Chromium driven headless through
//! chromedriver, waits bounded by [`BOUND`] (never timed assertions), and child processes
//! killed when dropped.

#![allow(dead_code, clippy::expect_used, clippy::unwrap_used)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use fantoccini::{Client, ClientBuilder, Locator};
use headroom_core::clock::{Clock as _, SignedDuration, SystemClock, Timestamp, TokioClock};

pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";
/// How long anything the test waits for may take before it fails.
pub const BOUND: Duration = Duration::from_secs(30);

/// A child process killed when dropped.
pub struct Process(pub Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

pub fn browser_missing() -> Option<String> {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    (!missing.is_empty()).then(|| format!("{} not installed", missing.join(" and ")))
}

pub fn free_port() -> u16 {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("addr").port()
}

/// Starts chromedriver and waits (bounded) until it accepts connections.
pub fn chromedriver() -> (Process, String) {
    let port = free_port();
    let child = Command::new(CHROMEDRIVER)
        .arg(format!("--port={port}"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("chromedriver starts");
    let started = SystemClock.now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            elapsed_since(started) < BOUND,
            "chromedriver did not listen"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
    (Process(child), format!("http://127.0.0.1:{port}"))
}

pub async fn browser(driver: &str, profile: &Path) -> Client {
    let args = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-dev-shm-usage",
        "--window-size=1280,1400",
    ]
    .iter()
    .map(|s| (*s).to_owned())
    .chain([format!("--user-data-dir={}", profile.display())])
    .collect::<Vec<_>>();
    let mut caps = serde_json::Map::new();
    caps.insert(
        "goog:chromeOptions".into(),
        serde_json::json!({"binary": CHROMIUM, "args": args}),
    );
    caps.insert(
        "goog:loggingPrefs".into(),
        serde_json::json!({"browser": "ALL"}),
    );
    ClientBuilder::new(hyper_util::client::legacy::connect::HttpConnector::new())
        .capabilities(caps)
        .connect(driver)
        .await
        .expect("a browser session")
}

/// chromedriver's browser log (`POST /session/{id}/se/log`).
#[derive(Debug)]
pub struct BrowserLog;

impl fantoccini::wd::WebDriverCompatibleCommand for BrowserLog {
    fn endpoint(
        &self,
        base_url: &url::Url,
        session_id: Option<&str>,
    ) -> Result<url::Url, url::ParseError> {
        base_url.join(&format!("session/{}/se/log", session_id.unwrap_or("")))
    }

    fn method_and_body(&self, _request_url: &url::Url) -> (http::Method, Option<String>) {
        (http::Method::POST, Some(r#"{"type":"browser"}"#.to_owned()))
    }
}

/// The text of the element `css` finds. The page updates itself live (server-sent events
/// replace whole sections), so an element found may be replaced before its text is read (a
/// stale element reference, seen in CI): it is found again, a few times at most.
pub async fn text_of(client: &Client, css: &str) -> String {
    let mut last = None;
    for _ in 0..5 {
        let element = client
            .find(Locator::Css(css))
            .await
            .unwrap_or_else(|e| panic!("{css}: {e}"));
        match element.text().await {
            Ok(text) => return text,
            Err(e) => last = Some(e),
        }
    }
    panic!("{css}: text: {last:?}")
}

/// Waits, at most [`BOUND`], until `css`'s text is `expected`.
pub async fn wait_for_text(client: &Client, css: &str, expected: &str) {
    let started = SystemClock.now();
    loop {
        if let Ok(element) = client.find(Locator::Css(css)).await
            && element.text().await.is_ok_and(|t| t == expected)
        {
            return;
        }
        assert!(
            elapsed_since(started) < BOUND,
            "{css} never read {expected:?} (last: {:?})",
            text_of(client, css).await
        );
        TokioClock::system()
            .sleep(SignedDuration::from_millis(200))
            .await;
    }
}

/// Wall time since `started`, through the clock module (this test drives real processes).
pub fn elapsed_since(started: Timestamp) -> Duration {
    Duration::try_from(SystemClock.now().duration_since(started)).unwrap_or(Duration::ZERO)
}

/// Waits, at most [`BOUND`], until `url` answers.
pub fn wait_until_listening(port: u16) {
    let started = SystemClock.now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(elapsed_since(started) < BOUND, "nothing listens on {port}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Waits, at most `bound`, until `css`'s text satisfies `accept`; returns it.
pub async fn wait_for(
    client: &Client,
    css: &str,
    bound: Duration,
    accept: impl Fn(&str) -> bool,
) -> String {
    let started = SystemClock.now();
    loop {
        if let Ok(element) = client.find(Locator::Css(css)).await
            && let Ok(text) = element.text().await
            && accept(&text)
        {
            return text;
        }
        assert!(
            elapsed_since(started) < bound,
            "{css} never read as expected (last: {:?})",
            match client.find(Locator::Css(css)).await {
                Ok(e) => e.text().await.unwrap_or_default(),
                Err(e) => e.to_string(),
            }
        );
        TokioClock::system()
            .sleep(SignedDuration::from_millis(200))
            .await;
    }
}

/// `headroom` in `dir` on `dash.db` against the API at `api` with `token`, nothing else from
/// the environment.
pub fn headroom(dir: &Path, api: &str, token: &str, args: &[&str]) -> Command {
    let mut c = Command::new(crate::common::BIN);
    c.current_dir(dir)
        .args(["--db", "dash.db", "--api-url", api])
        .args(args)
        .env_remove("GH_TOKEN")
        .env_remove("HEADROOM_DB")
        .env_remove("HEADROOM_LISTEN")
        .env_remove("GITHUB_API_URL")
        .env("GITHUB_TOKEN", token)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

/// `headroom run --listen` with `token` on a free loopback port, once it listens; its page's
/// URL. It wakes hibernating runs every second, a second after their window reopens.
pub fn service(dir: &Path, api: &str, token: &str) -> (Process, String) {
    let port = free_port();
    let listen = format!("127.0.0.1:{port}");
    let args = [
        "run",
        "--listen",
        &listen,
        "--reset-margin-secs",
        "1",
        "--sync-poll-secs",
        "1",
    ];
    let child = headroom(dir, api, token, &args)
        .spawn()
        .expect("headroom run starts");
    let service = Process(child);
    wait_until_listening(port);
    (service, format!("http://{listen}/"))
}

/// Runs `check` against a fresh browser session (its profile in `dir`), closing the session
/// whatever `check` found, so no browser outlives the test; then fails as `check` did.
pub async fn in_browser<F, Fut>(dir: &Path, check: F)
where
    F: FnOnce(Client) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let (_driver, driver_url) = chromedriver();
    let client = browser(&driver_url, &dir.join("chromium-profile")).await;
    let outcome = tokio::spawn(check(client.clone())).await;
    let closed = client.close().await;
    if let Err(failed) = outcome {
        std::panic::resume_unwind(failed.into_panic());
    }
    closed.expect("close the session");
}
