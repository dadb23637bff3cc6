//! Why work waits, from what the sync runner recorded: a deferred checkpoint's detail is the
//! governor's verdict as text (`core quota exhausted: 10 left, 11 needed to send safely; resets
//! at 2027-01-15T15:57:00Z`, [`headroom_core::governor::WaitReason`]'s wording). The governor
//! holds a bucket back before its remaining reaches 0 (its reserve), so a bucket reading of
//! "10 left" says nothing of a wait: these holds are what let the bucket panel say so. Pure.

use headroom_core::clock::Timestamp;
use headroom_store::{Checkpoint, CheckpointStatus, SyncRun};
use serde::Serialize;

use super::phrase::{Phrase, When};
use super::words;

/// The governor's hold on a bucket, as a deferred checkpoint recorded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Hold {
    /// The bucket (`core`, `graphql`, …).
    pub bucket: String,
    /// What was left when the work was held back.
    pub remaining: u64,
    /// What the next request needed left to be sent safely (the governor's reserve rule).
    pub needed: u64,
    /// When the window reopens.
    #[schema(value_type = String, format = DateTime)]
    pub reopens_at: Timestamp,
}

/// Reads a hold back from a checkpoint's detail; `None` for any other reason.
pub fn parse_hold(detail: &str) -> Option<Hold> {
    let (bucket, rest) = detail.split_once(" quota exhausted: ")?;
    let (remaining, rest) = rest.split_once(" left, ")?;
    let (needed, rest) = rest.split_once(" needed to send safely; resets at ")?;
    Some(Hold {
        bucket: bucket.trim().to_owned(),
        remaining: remaining.trim().parse().ok()?,
        needed: needed.trim().parse().ok()?,
        reopens_at: rest.trim().parse().ok()?,
    })
}

/// A run's reasons to wait, each once: one hold per bucket (the latest window's), and every
/// other reason once, in the order first met.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Reasons {
    /// The governor's holds, one per bucket.
    pub holds: Vec<Hold>,
    /// Every other reason, verbatim.
    pub other: Vec<String>,
}

/// Sorts deferred checkpoints' details into [`Reasons`].
pub fn reasons<'a>(details: impl IntoIterator<Item = &'a str>) -> Reasons {
    let mut out = Reasons::default();
    for detail in details {
        match parse_hold(detail) {
            Some(hold) => match out.holds.iter_mut().find(|h| h.bucket == hold.bucket) {
                // The latest window's hold says when the bucket reopens now.
                Some(kept) if hold.reopens_at > kept.reopens_at => *kept = hold,
                Some(_) => {}
                None => out.holds.push(hold),
            },
            None if !out.other.iter().any(|o| o == detail) => out.other.push(detail.to_owned()),
            None => {}
        }
    }
    out
}

/// What a waiting run says it waits for, in the governor's words: its deferred checkpoints'
/// details, then the reasons its summary kept when it hibernated (a run whose stages were all
/// held back before any deferred a checkpoint records its reasons there only).
pub fn wait_details(run: &SyncRun, checkpoints: &[Checkpoint]) -> Vec<String> {
    let deferred = checkpoints
        .iter()
        .filter(|c| c.status == CheckpointStatus::Deferred)
        .filter_map(|c| c.detail.clone());
    let hibernated = run
        .summary
        .as_ref()
        .and_then(|s| s.get("hibernation_reasons"))
        .and_then(serde_json::Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(|r| r.as_str().map(str::to_owned));
    deferred.chain(hibernated).collect()
}

/// "REST held back: 10 left, the next request needs 11 to stay safe — reopens 15:57 UTC
/// (in 1 min)"; `remaining` is the bucket's current reading when there is one.
pub fn hold_phrase(hold: &Hold, remaining: Option<u64>, reopens: Timestamp) -> Phrase {
    let label = words::bucket_label(&hold.bucket);
    let left = remaining.unwrap_or(hold.remaining);
    let mut p = Phrase::default();
    if left < hold.needed {
        p.push(format!(
            "{label} held back: {} left, the next request needs {} to stay safe — ",
            words::thousands(left),
            words::thousands(hold.needed)
        ));
    } else {
        p.push(format!("{label} held back — "));
    }
    p.when(When::reopens(reopens));
    p
}

/// A run's why in one sentence: its holds, then its other reasons, each once.
pub fn run_why(reasons: &Reasons) -> Phrase {
    let mut p = Phrase::default();
    for (i, hold) in reasons.holds.iter().enumerate() {
        if i > 0 {
            p.push("; ");
        }
        p.append(hold_phrase(hold, None, hold.reopens_at));
    }
    for (i, other) in reasons.other.iter().enumerate() {
        if i > 0 || !reasons.holds.is_empty() {
            p.push("; ");
        }
        p.push(other.clone());
    }
    p
}

/// "1 sync run waiting", "2 sync runs waiting".
pub fn runs_waiting(n: u64) -> String {
    format!(
        "{} sync run{} waiting",
        words::thousands(n),
        if n == 1 { "" } else { "s" }
    )
}

#[cfg(test)]
mod tests {
    use headroom_core::governor::WaitReason;

    use super::*;

    fn t(secs: i64) -> Timestamp {
        // 15:56:00 UTC.
        Timestamp::from_second(1_800_000_000 - 1_800_000_000 % 86_400 + 15 * 3600 + 56 * 60 + secs)
            .expect("valid")
    }

    /// The detail exactly as the sync runner records it: the governor's own wording.
    fn detail(remaining: u64, needed: u64, reset: Timestamp) -> String {
        WaitReason::Exhausted {
            bucket: "core".into(),
            remaining,
            needed,
            reset_at: reset,
        }
        .to_string()
    }

    #[test]
    fn the_governors_hold_reads_back_from_its_own_wording() {
        assert_eq!(
            parse_hold(&detail(10, 11, t(60))),
            Some(Hold {
                bucket: "core".into(),
                remaining: 10,
                needed: 11,
                reopens_at: t(60)
            })
        );
        assert_eq!(parse_hold("REST exhausted until 08:15"), None);
        assert_eq!(parse_hold("transient failure: timeout"), None);
    }

    #[test]
    fn a_runs_why_is_one_deduplicated_sentence_in_words_without_rfc3339() {
        // One deferred checkpoint per stage, each in its own words and times.
        let details = [
            detail(12, 11, t(-3600)),
            detail(10, 11, t(60)),
            detail(10, 11, t(60)),
            "cooling down after a secondary rate limit another request met".to_owned(),
            "cooling down after a secondary rate limit another request met".to_owned(),
        ];
        let r = reasons(details.iter().map(String::as_str));
        assert_eq!(r.holds.len(), 1, "one hold per bucket: {r:?}");
        let why = run_why(&r).plain(t(0));
        assert_eq!(
            why,
            "REST held back: 10 left, the next request needs 11 to stay safe — reopens 15:57 UTC \
             (in 1 min); cooling down after a secondary rate limit another request met"
        );
        assert!(!why.contains("T15:57:00Z"), "{why}");
        assert_eq!(runs_waiting(1), "1 sync run waiting");
        assert_eq!(runs_waiting(2), "2 sync runs waiting");
    }
}
