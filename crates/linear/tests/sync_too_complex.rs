//! "Query too complex" (HTTP 400 over the per-query maximum) is not retried as it is: the
//! page size halves until Linear answers, and after a few answers in a row doubles back
//! toward the default, as GitHub's resource limits are handled. The simulated workspace is
//! configured with a maximum between the issues page's cost at 25 and at 50.

#![allow(clippy::expect_used)]

mod support;

use headroom_linear::sync::Selection;
use headroom_linear::sync::page::{DEFAULT_FIRST, GROW_AFTER};
use headroom_linear::{complexity, documents};
use serde_json::json;
use support::{drive, new_run, root, sim_runner, spec, stored, world};

fn issues_page(first: u32) -> u64 {
    let vars = json!({ "first": first, "after": null, "filter": null });
    complexity::estimate(documents::ISSUES.text, &vars).expect("estimable")
}

#[tokio::test]
async fn a_page_linear_finds_too_complex_halves_and_grows_back_after_successes() {
    let half = DEFAULT_FIRST / 2;
    let max = issues_page(half) + 5;
    assert!(issues_page(DEFAULT_FIRST) > max);
    // 2 teams × 60 issues: pages of 25 until the size grows back, and then one more refusal.
    let mut spec = spec(2, 60, 1_000_000);
    spec.limits.max_query_complexity = max;
    let w = world(spec).await;
    let runner = sim_runner(&w).await;
    let id = new_run(&w, &Selection::default()).await;
    let (summary, _) = drive(&runner, w.clock, id).await;

    assert!(
        summary.stages_failed.is_empty(),
        "{:?}",
        summary.stages_failed
    );
    assert_eq!(
        stored(w.store.as_ref()).await,
        w.sim.linear_workspace_counts()
    );
    let log = w.sim.request_log();
    let issues: Vec<u16> = log
        .iter()
        .filter(|e| root(e) == "issues")
        .map(|e| e.status)
        .collect();
    // Refused at 50; three pages of 25 (75 issues); grown back to 50 and refused; the other
    // 45 in pages of 25.
    assert_eq!(GROW_AFTER, 3);
    assert_eq!(issues, [400, 200, 200, 200, 400, 200, 200]);
    // No other document is over the maximum at the default size: nothing else refused.
    assert_eq!(log.iter().filter(|e| e.status == 400).count(), 2);
}
