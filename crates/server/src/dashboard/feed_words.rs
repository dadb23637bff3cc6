//! The feed's status document in a few sentences — the core ledger, the enrichment backlog,
//! the last window's flow and the catch-up verdict — for the page's feed panel, above the
//! document's every number. Pure: reads the document as the page holds it (JSON).

use headroom_core::clock::Timestamp;
use serde_json::Value;

use super::words;

fn count(v: &Value) -> Option<u64> {
    v.as_u64()
}

fn at(v: &Value) -> Option<Timestamp> {
    v.as_str().and_then(|s| s.parse().ok())
}

fn ledger(doc: &Value, now: Timestamp) -> String {
    let l = &doc["ledger"];
    if l["present"] != Value::Bool(true) {
        return "No core quota ledger yet: the feed has not polled.".into();
    }
    let mut out = match (count(&l["remaining"]), count(&l["limit"])) {
        (Some(remaining), Some(limit)) => format!(
            "Core quota: {} of {} left",
            words::thousands(remaining),
            words::thousands(limit)
        ),
        _ => "Core quota: not read yet".into(),
    };
    if let Some(reset) = at(&l["reset_at"]).filter(|t| *t > now) {
        out.push_str(&format!(
            ", resets {} (in {})",
            words::clock_time(reset),
            words::countdown(now, reset)
        ));
    }
    if l["globally_blocked_now"] == Value::Bool(true)
        && let Some(until) = at(&l["global_blocked_until"])
    {
        out.push_str(&format!(
            "; blocked by a secondary limit until {}",
            words::clock_time(until)
        ));
    }
    out.push('.');
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

/// The sentences, in the panel's order (a failing source first: it explains the rest).
pub fn summary(doc: &Value, now: Timestamp) -> Vec<String> {
    let mut out = failing_sources(doc);
    out.extend([ledger(doc, now), backlog(doc), flow(doc)]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
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
        let s = summary(&doc, t(0));
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
        let s = summary(&doc, t(0));
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
        let s = summary(&json!({"ledger": {"present": false}}), t(0));
        assert_eq!(s[0], "No core quota ledger yet: the feed has not polled.");
        assert_eq!(s[1], "Enrichment backlog: empty.");
        assert!(s[2].ends_with("too short a sample to judge whether it keeps up."));
    }
}
