//! The page's render functions on fixed data: numbers in the markup, the warning, waits in
//! words, a hibernating run's reason and wake, escaping.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::quota_history::{BucketNow, StoredQuotaReading};
use headroom_store::{QuotaReading, SyncRun, SyncRunStatus};

use super::*;
use crate::api::quota::{BucketView, CredentialView, IdentityQuota, QuotaSnapshot};
use crate::api::sync::{RunProgress, RunView, RunsPage};

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn identity() -> IdentityQuota {
    let reading = QuotaReading {
        provider: "github".into(),
        host: "api.github.com".into(),
        subject: "user:alice".into(),
        bucket: "core".into(),
        limit: Some(5000),
        remaining: Some(4212),
        used: Some(788),
        reset_at: Some(t(720)),
        in_flight: 3,
        waiting: 0,
        blocked_until: None,
        last_reason: None,
        process_id: "p".into(),
        observed_at: t(0),
    };
    IdentityQuota {
        host: "api.github.com".into(),
        subject: "user:alice".into(),
        name: "alice on api.github.com".into(),
        buckets: vec![BucketView {
            now: BucketNow {
                latest: StoredQuotaReading { id: 1, reading },
                in_flight: 3,
                waiting: 0,
                live_processes: 1,
            },
            wait: Some("GraphQL <stages> running".into()),
        }],
        credentials: vec![CredentialView {
            fingerprint: "0123abcd".into(),
            owner: "alice".into(),
            last_seen_at: t(0),
        }],
        credentials_sharing: 2,
        shared_quota_warning: Some("these 2 credentials share alice's 5,000 requests".into()),
        runs_waiting: 1,
    }
}

fn hibernating_run() -> RunView {
    RunView {
        run: SyncRun {
            id: 7,
            kind: "org".into(),
            target: "acme".into(),
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            status: SyncRunStatus::Hibernating,
            requested_stages: None,
            not_before: Some(t(900)),
            deferral_count: 1,
            first_deferred_at: None,
            total_wait: SignedDuration::ZERO,
            failure_reason: None,
            summary: None,
            claimed_by: None,
            claim_expires_at: None,
            created_at: t(0),
            started_at: Some(t(0)),
            finished_at: None,
            updated_at: t(0),
        },
        progress: RunProgress {
            stages_total: 8,
            stages_done: 4,
            current_stage: Some("pull_requests".into()),
            stage_number: Some(5),
            scopes_done: 36,
            scopes_total: 125,
            page: 12,
            rows: 12_345,
            next_wake: Some(t(900)),
            waiting_because: vec!["REST exhausted".into()],
        },
    }
}

fn data() -> PageData {
    PageData {
        quota: QuotaSnapshot {
            captured_at: t(0),
            identities: vec![identity()],
        },
        runs: RunsPage {
            runs: vec![hibernating_run()],
            next: None,
        },
        charts: Vec::new(),
        feed: Ok(serde_json::json!({"ledger": {"remaining": 4212, "reset_at": null}})),
    }
}

#[test]
fn the_page_carries_every_number_without_script() {
    let html = page(&data(), "/* script */", "/* style */");
    assert!(html.starts_with("<!doctype html>"));
    for needle in [
        "<h3>alice on api.github.com</h3>",
        "<span class=\"remaining\">4,212</span> / <span class=\"limit\">5,000</span>",
        "<span class=\"in-flight\">3</span> in flight",
        "datetime=\"2027-01-15T08:12:00Z\">08:12 UTC</time>",
        "(in <time class=\"countdown\" datetime=\"2027-01-15T08:12:00Z\">12 min</time>)",
        "width:84.2%",
        "class=\"warning shared-quota\"",
        "<code>0123abcd</code> owned by alice",
        "1 sync run(s) waiting",
        "<script>/* script */</script>",
        "<th>ledger.remaining</th><td>4212</td>",
        "<th>ledger.reset_at</th><td>—</td>",
    ] {
        assert!(html.contains(needle), "missing {needle}");
    }
    // Text from the database is escaped.
    assert!(html.contains("GraphQL &lt;stages&gt; running"));
}

#[test]
fn a_hibernating_run_shows_its_progress_reason_and_wake() {
    let html = runs_table(&data().runs, t(0));
    assert!(html.contains("stage 5 of 8 · pull_requests · repository 37 of 125 · page 12"));
    assert!(html.contains("<td class=\"status\">hibernating</td>"));
    assert!(html.contains("<td class=\"why\">REST exhausted</td>"));
    assert!(html.contains(
        "(in <time class=\"countdown\" datetime=\"2027-01-15T08:15:00Z\">15 min</time>)"
    ));
    assert!(html.contains("<td class=\"rows\">12,345</td>"));
}

#[test]
fn empty_panels_say_so() {
    let mut empty = data();
    empty.quota.identities.clear();
    empty.runs.runs.clear();
    empty.feed = Err("no feed".into());
    let html = main(&empty);
    assert!(html.contains("No quota readings yet."));
    assert!(html.contains("No sync runs."));
    assert!(html.contains("could not be read: no feed"));
}
