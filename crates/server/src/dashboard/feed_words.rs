//! The feed's status document in a few sentences — the core ledger, the enrichment backlog,
//! the last window's flow and the catch-up verdict — for the page's feed panel, above the
//! document's every number. Pure: reads the document as the page holds it (JSON).

use headroom_core::clock::Timestamp;
use headroom_store::quota_history::BucketNow;
use serde_json::Value;

use super::phrase::{Phrase, When};
use super::words;
use crate::api::quota::{IdentityQuota, QuotaSnapshot};

fn count(v: &Value) -> Option<u64> {
    v.as_u64()
}

fn at(v: &Value) -> Option<Timestamp> {
    v.as_str().and_then(|s| s.parse().ok())
}

/// The quota panel's reading of the feed ledger's core bucket, when the page has one: the
/// ledger's identity (the only one on its host when the ledger does not name its owner).
pub fn core_panel<'a>(
    doc: &Value,
    quota: &'a QuotaSnapshot,
) -> Option<(&'a IdentityQuota, &'a BucketNow)> {
    let l = &doc["ledger"];
    let host = l["host"].as_str()?;
    let on_host = || quota.identities.iter().filter(move |i| i.host == host);
    let identity = match l["subject"].as_str() {
        Some(subject) => on_host().find(|i| i.subject == subject)?,
        None if on_host().count() == 1 => on_host().next()?,
        None => return None,
    };
    let bucket = identity
        .buckets
        .iter()
        .find(|b| b.now.latest.reading.bucket == "core")?;
    Some((identity, &bucket.now))
}

fn ledger(doc: &Value, quota: &QuotaSnapshot) -> Phrase {
    let l = &doc["ledger"];
    if l["present"] != Value::Bool(true) {
        return Phrase::text("No core quota ledger yet: the feed has not polled.");
    }
    // One source per number: where the page shows the same bucket, its reading is the one said.
    let panel = core_panel(doc, quota);
    let (remaining, limit, reset) = match panel {
        Some((_, b)) => {
            let r = &b.latest.reading;
            (r.remaining, r.limit, r.reset_at)
        }
        None => (
            count(&l["remaining"]),
            count(&l["limit"]),
            at(&l["reset_at"]),
        ),
    };
    let mut out = match (remaining, limit) {
        (Some(remaining), Some(limit)) => Phrase::text(format!(
            "Core quota: {} of {} left",
            words::thousands(remaining),
            words::thousands(limit)
        )),
        _ => Phrase::text("Core quota: not read yet"),
    };
    if let Some((identity, _)) = panel {
        out.push(format!(" (the REST panel of {} above)", identity.name));
    }
    if let Some(reset) = reset {
        out.push(", ").when(When::resets(reset));
    }
    if l["globally_blocked_now"] == Value::Bool(true)
        && let Some(until) = at(&l["global_blocked_until"])
    {
        out.push(format!(
            "; blocked by a secondary limit until {}",
            words::clock_time(until)
        ));
    }
    out.push(".");
    out
}

fn backlog(doc: &Value) -> String {
    let e = &doc["enrichment"];
    let (actors, repositories) = (
        count(&e["actors"]["backlog_count"]).unwrap_or(0),
        count(&e["repositories"]["backlog_count"]).unwrap_or(0),
    );
    if actors == 0 && repositories == 0 {
        return "Enrichment backlog: empty.".into();
    }
    let oldest = [&e["actors"], &e["repositories"]]
        .iter()
        .filter_map(|c| c["oldest_pending_age_seconds"].as_i64())
        .max();
    let mut out = format!(
        "Enrichment backlog: {} actors and {} repositories waiting",
        words::thousands(actors),
        words::thousands(repositories)
    );
    if let Some(age) = oldest {
        out.push_str(&format!(
            ", the oldest for {}",
            words::duration(headroom_core::clock::SignedDuration::from_secs(age))
        ));
    }
    out.push_str(if e["claimable_now"] == Value::Bool(true) {
        "; work can be claimed now."
    } else {
        "; nothing claimable right now."
    });
    out
}

fn flow(doc: &Value) -> String {
    let c = &doc["throughput"]["combined"];
    let verdict = match doc["throughput"]["catch_up"]["state"].as_str() {
        Some("keeping_up") => "keeping up (as many leave the backlog as arrive)",
        Some("not_keeping_up") => "not keeping up (more arrive than leave the backlog)",
        _ => "too short a sample to judge whether it keeps up",
    };
    format!(
        "Last window: {} entities arrived, {} completed, {} gave up; {verdict}.",
        words::thousands(count(&c["arrivals"]).unwrap_or(0)),
        words::thousands(count(&c["completions"]).unwrap_or(0)),
        words::thousands(count(&c["terminals"]).unwrap_or(0)),
    )
}

/// A sentence for each source whose latest attempt failed (a rejected credential among
/// them): what went wrong, how often in a row, and when it is tried again.
fn failing_sources(doc: &Value) -> Vec<String> {
    let Some(sources) = doc["sources"].as_array() else {
        return Vec::new();
    };
    sources
        .iter()
        .filter_map(|s| {
            let failures = count(&s["consecutive_failures"]).filter(|n| *n > 0)?;
            let error = s["last_error"].as_str().unwrap_or("no message");
            let mut out = format!(
                "The feed's latest poll failed ({} in a row): {error}",
                words::thousands(failures)
            );
            if s["status"] == "failed" {
                out.push_str("; the source is suspended.");
            } else if let Some(retry) = at(&s["retry_not_before_at"]) {
                out.push_str(&format!("; next try at {}.", words::clock_time(retry)));
            } else {
                out.push('.');
            }
            Some(out)
        })
        .collect()
}

/// The sentences, in the panel's order (a failing source first: it explains the rest), with
/// the quota panels beside them so that no number is said twice from two sources.
pub fn summary(doc: &Value, quota: &QuotaSnapshot) -> Vec<Phrase> {
    let mut out: Vec<Phrase> = failing_sources(doc).into_iter().map(Phrase::text).collect();
    out.extend([
        ledger(doc, quota),
        Phrase::text(backlog(doc)),
        Phrase::text(flow(doc)),
    ]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    fn summary_at(doc: &Value, quota: &QuotaSnapshot) -> Vec<String> {
        summary(doc, quota)
            .iter()
            .map(|p| p.plain(quota.captured_at))
            .collect()
    }

    fn no_panels(now: Timestamp) -> QuotaSnapshot {
        QuotaSnapshot {
            captured_at: now,
            identities: Vec::new(),
        }
    }

    #[test]
    fn the_feed_says_the_core_quota_of_the_rest_panel_not_a_second_number() {
        use crate::api::quota::{BucketView, IdentityQuota};
        use headroom_store::QuotaReading;
        use headroom_store::quota_history::StoredQuotaReading;
        let reading = QuotaReading {
            provider: "github".into(),
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            bucket: "core".into(),
            limit: Some(400),
            remaining: Some(10),
            used: Some(390),
            reset_at: Some(t(60)),
            in_flight: 0,
            waiting: 0,
            blocked_until: None,
            last_reason: None,
            process_id: "p".into(),
            observed_at: t(0),
        };
        let quota = QuotaSnapshot {
            captured_at: t(0),
            identities: vec![IdentityQuota {
                host: "api.github.com".into(),
                subject: "user:alice".into(),
                name: "alice on api.github.com".into(),
                buckets: vec![BucketView {
                    now: BucketNow {
                        latest: StoredQuotaReading { id: 1, reading },
                        in_flight: 0,
                        waiting: 0,
                        live_processes: 1,
                    },
                    wait: None,
                    held_back: None,
                    reset_passed: false,
                }],
                credentials: Vec::new(),
                credentials_sharing: 1,
                shared_quota_warning: None,
                runs_waiting: 0,
            }],
        };
        // The feed's own ledger is older: 392 left.
        let doc = json!({
            "ledger": {"present": true, "host": "api.github.com", "subject": "user:alice",
                       "remaining": 392, "limit": 400, "reset_at": t(60).to_string()}
        });
        let s = summary_at(&doc, &quota);
        let ledger = s
            .iter()
            .find(|s| s.starts_with("Core quota"))
            .expect("a ledger sentence");
        assert!(
            ledger.starts_with(
                "Core quota: 10 of 400 left (the REST panel of alice on api.github.com above)"
            ),
            "{ledger}"
        );
        assert!(!ledger.contains("392"), "{ledger}");
        // Past its reset, said as such.
        let later = QuotaSnapshot {
            captured_at: t(120),
            ..quota
        };
        let s = summary_at(&doc, &later);
        assert!(
            s.iter()
                .any(|s| s.contains("reset ")
                    && s.contains("awaiting the new window's first response")),
            "{s:#?}"
        );
    }

    #[test]
    fn the_feed_reads_in_sentences() {
        let doc = json!({
            "ledger": {"present": true, "remaining": 4212, "limit": 5000,
                       "reset_at": t(720).to_string(), "globally_blocked_now": false},
            "enrichment": {
                "actors": {"backlog_count": 120, "oldest_pending_age_seconds": 7200},
                "repositories": {"backlog_count": 30, "oldest_pending_age_seconds": 60},
                "claimable_now": true
            },
            "throughput": {"combined": {"arrivals": 400, "completions": 380, "terminals": 30},
                           "catch_up": {"state": "keeping_up"}}
        });
        let s = summary_at(&doc, &no_panels(t(0)));
        assert!(
            s[0].starts_with("Core quota: 4,212 of 5,000 left, resets "),
            "{}",
            s[0]
        );
        assert!(s[0].ends_with("(in 12 min)."), "{}", s[0]);
        assert_eq!(
            s[1],
            "Enrichment backlog: 120 actors and 30 repositories waiting, the oldest for 2 h; \
             work can be claimed now."
        );
        assert_eq!(
            s[2],
            "Last window: 400 entities arrived, 380 completed, 30 gave up; keeping up (as many \
             leave the backlog as arrive)."
        );
    }

    #[test]
    fn a_failing_source_comes_first_with_its_error_and_next_try() {
        let doc = json!({
            "ledger": {"present": false},
            "sources": [
                {"status": "idle", "consecutive_failures": 2,
                 "last_error": "credential rejected (401): Bad credentials",
                 "retry_not_before_at": t(120).to_string()},
                {"status": "failed", "consecutive_failures": 1,
                 "last_error": "forbidden (403): SSO"},
                {"status": "idle", "consecutive_failures": 0, "last_error": null}
            ]
        });
        let s = summary_at(&doc, &no_panels(t(0)));
        assert_eq!(s.len(), 2 + 3, "{s:#?}");
        assert!(
            s[0].starts_with(
                "The feed's latest poll failed (2 in a row): credential rejected (401): \
                 Bad credentials; next try at "
            ),
            "{}",
            s[0]
        );
        assert_eq!(
            s[1],
            "The feed's latest poll failed (1 in a row): forbidden (403): SSO; the source is \
             suspended."
        );
        assert_eq!(s[2], "No core quota ledger yet: the feed has not polled.");
    }

    #[test]
    fn an_empty_feed_says_so() {
        let s = summary_at(&json!({"ledger": {"present": false}}), &no_panels(t(0)));
        assert_eq!(s[0], "No core quota ledger yet: the feed has not polled.");
        assert_eq!(s[1], "Enrichment backlog: empty.");
        assert!(s[2].ends_with("too short a sample to judge whether it keeps up."));
    }
}
