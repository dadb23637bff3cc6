//! The dashboard tells the truth at a glance, in a real browser, through a platform engineer's
//! day on one owner's quota (issue "The dashboard and the terminal tell the truth"):
//!
//! - `headroom run` serves the page and polls the feed with alice's token `t1`;
//! - a second process probes the quota with alice's other token `t2`, then exits;
//! - another client of alice (not headroom) spends part of the window with `t2`;
//! - `headroom sync org` with alice's third token `t3` spends the rest, down to the governor's
//!   reserve, and hibernates: a run bound to a credential that no live process holds.
//!
//! The page, loaded once and followed over its event stream (reloaded only where a section is
//! documented as not live), must say why work waits in words before 0 (1), that nobody resumes
//! the run and the command that will (2), show no identity keyed by a credential (3), count
//! one number once and never "(in now)" (5), count in flight for live processes only (6), mark
//! no provider refusal when the provider refused nothing (7), name who spent the window and
//! what was spent outside headroom (8), and give the run's stages, elapsed time and the lack
//! of an estimate (9). Without Chromium the test reports a skip (a failure under `CI`).

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod browser;
mod common;

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use browser::{
    BOUND, BrowserLog, browser_missing, headroom, in_browser, service, text_of, wait_for,
    wait_for_text,
};
use fantoccini::{Client, Locator};

/// The run's wake plus the minute after which the page says nobody resumed it, plus slack.
const UNRESUMED_BOUND: Duration = Duration::from_secs(150);

/// Another client of alice: plain GETs with `curl` straight to the simulator (loopback), not
/// through headroom.
fn spend_outside(sim: &common::Sim, token: &str, requests: usize) {
    for _ in 0..requests {
        let status = Command::new("curl")
            .args(["-s", "-o", "/dev/null", "-H"])
            .arg(format!("Authorization: Bearer {token}"))
            .arg(format!("{}/orgs/acme", sim.url))
            .status()
            .expect("curl runs");
        assert!(status.success(), "curl failed: {status}");
    }
}

/// Whether `text` holds an RFC 3339 instant (`2026-12-06T20:25:32`).
fn has_rfc3339(text: &str) -> bool {
    let shape = b"dddd-dd-ddTdd:dd:dd";
    text.as_bytes().windows(shape.len()).any(|w| {
        w.iter().zip(shape).all(|(c, s)| match s {
            b'd' => c.is_ascii_digit(),
            _ => c == s,
        })
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_tells_the_truth_through_a_day_on_one_owners_quota() {
    let name = "the_dashboard_tells_the_truth_through_a_day_on_one_owners_quota";
    if let Some(reason) = browser_missing() {
        headroom_testkit::skip(
            name,
            &format!("{reason} (apt-get install chromium chromium-driver)"),
        );
        return;
    }
    if Command::new("curl").arg("--version").output().is_err() {
        headroom_testkit::skip(name, "curl not installed (apt-get install curl)");
        return;
    }
    let dir = tempfile::tempdir().expect("tempdir");
    // Three tokens of alice; 60 REST requests per 40-second window: the sync's ~100 REST
    // requests do not fit in what the others leave, so it hibernates.
    let sim = common::Sim::small_org(&["t1", "t2", "t3"], 40, &[]);
    let (_service, url) = service(dir.path(), &sim.url, "t1");
    let path = dir.path().to_owned();
    in_browser(dir.path(), move |client| follow(client, url, path, sim)).await;
}

async fn follow(client: Client, url: String, dir: PathBuf, sim: common::Sim) {
    client.goto(&url).await.expect("the page loads");
    wait_for_text(&client, "#live", "live").await;
    let core = "[data-bucket=\"127.0.0.1|user:alice|core\"]";

    // A second process on alice's other token probes the quota, then exits.
    let probe = headroom(&dir, &sim.url, "t2", &["quota", "probe"])
        .status()
        .expect("headroom quota probe runs");
    assert!(probe.success(), "quota probe failed: {probe}");
    // (6) In flight counts live processes only: the probe's slots are gone once it exits.
    wait_for(&client, &format!("{core} .in-flight"), BOUND, |t| t == "0").await;

    // Another client of alice spends five requests of the window outside headroom, then the
    // sync spends the rest down to the governor's reserve and hibernates.
    spend_outside(&sim, "t2", 5);
    let sync = headroom(
        &dir,
        &sim.url,
        "t3",
        &[
            "sync",
            "org",
            "acme",
            "--hold-secs",
            "0",
            "--reset-margin-secs",
            "1",
        ],
    )
    .status()
    .expect("headroom sync org runs");
    assert!(sync.success(), "sync org failed: {sync}");

    wait_for(&client, "tr[data-run] .status", BOUND, |t| {
        t.starts_with("hibernating")
    })
    .await;
    // (1) The bucket that holds the run back before 0 says so in words, with the run waiting.
    let held = wait_for(&client, &format!("{core} .wait"), BOUND, |t| {
        t.contains("REST held back: ")
    })
    .await;
    assert!(
        held.contains("1 sync run waiting"),
        "the REST panel: {held}"
    );
    assert!(held.contains("left, the next request needs"), "{held}");
    // (1) The run's why is one sentence in words, not the governor's text per checkpoint.
    let why = text_of(&client, "tr[data-run] .why").await;
    assert!(why.starts_with("REST held back: "), "why: {why}");
    assert_eq!(why.matches("REST held back").count(), 1, "why: {why}");
    assert!(!has_rfc3339(&why), "RFC 3339 in: {why}");

    // The spend section is drawn with the page (docs/DASHBOARD.md): read it in this window.
    client.goto(&url).await.expect("the page reloads");
    wait_for_text(&client, "#live", "live").await;
    // (8) Who spent the window: the sync run, the feed, the probe, and outside headroom.
    // The sync spent GraphQL before REST held it back; the others spent REST.
    let graphql = text_of(&client, "li.bucket-spend[data-spend-bucket=\"graphql\"]").await;
    assert!(
        graphql.contains("sync run #1: "),
        "GraphQL spend: {graphql}"
    );
    let spend = text_of(&client, "li.bucket-spend[data-spend-bucket=\"core\"]").await;
    assert!(spend.contains("quota probe: "), "spend: {spend}");
    assert!(spend.contains("outside headroom: "), "spend: {spend}");
    let outside: u64 = client
        .find(Locator::Css("li.bucket-spend[data-spend-bucket=\"core\"]"))
        .await
        .expect("the core window's spend")
        .attr("data-outside")
        .await
        .expect("attribute")
        .and_then(|v| v.parse().ok())
        .expect("a count outside headroom");
    assert_eq!(outside, 5, "spend: {spend}");

    // (3) No identity keyed by a credential, anywhere on the page.
    let page = client.source().await.expect("the page's source");
    assert!(!page.contains("credential:"), "a credential-keyed identity");
    let warning = text_of(&client, ".warning.shared-quota").await;
    assert!(
        warning.starts_with("these 3 credentials share alice's"),
        "{warning}"
    );
    // (7) Local waits and hibernations are not drawn as provider refusals.
    let legends = client
        .find_all(Locator::Css(&format!("{core} .legend")))
        .await
        .expect("legends");
    assert!(!legends.is_empty(), "the core charts have legends");
    for legend in legends {
        let text = legend.text().await.expect("legend");
        assert!(text.contains("0 provider refusals"), "legend: {text}");
    }
    assert!(
        client
            .find_all(Locator::Css(&format!("{core} .limit-hit")))
            .await
            .expect("marks")
            .is_empty(),
        "a provider refusal was drawn though the provider refused nothing"
    );
    // (9) The run's progress names what ran and says it has no estimate to end by.
    let progress = text_of(&client, "tr[data-run] .progress").await;
    assert!(progress.contains("no estimate"), "progress: {progress}");

    // (2) The service holds t1, the run is bound to t3: once it is overdue, the page says
    // nobody resumes it, why, and the command that will.
    let unresumed = wait_for(&client, "tr[data-run] .unresumed", UNRESUMED_BOUND, |t| {
        !t.is_empty()
    })
    .await;
    assert!(unresumed.contains("--resume 1"), "{unresumed}");
    // (5) A reset already past never reads "(in now)".
    let page = client.source().await.expect("the page's source");
    assert!(!page.contains("(in now)"), "a past reset read as (in now)");

    let log = client.issue_cmd(BrowserLog).await.expect("the browser log");
    let errors: Vec<&serde_json::Value> = log
        .as_array()
        .map(|entries| entries.iter().filter(|e| e["level"] == "SEVERE").collect())
        .unwrap_or_default();
    assert!(errors.is_empty(), "console errors: {errors:?}");
}
