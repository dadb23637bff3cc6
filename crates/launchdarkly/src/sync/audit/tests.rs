use std::collections::BTreeSet;

use proptest::prelude::*;
use serde_json::json;

use super::*;

/// The audit log as LaunchDarkly documents it: entries after `after` and before `before`
/// (both exclusive), newest first, at most `limit` — a page may end inside a millisecond —
/// and whether more follow (`linked`: a `next` link, when the server sends links).
fn serve_linked(log: &[(i64, String)], cursor: &AuditCursor, links: bool) -> (Vec<Value>, bool) {
    let mut hits: Vec<&(i64, String)> = log
        .iter()
        .filter(|(ms, _)| cursor.after.is_none_or(|a| *ms > a))
        .filter(|(ms, _)| cursor.before.is_none_or(|b| *ms < b))
        .collect();
    hits.sort_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    let items: Vec<Value> = hits
        .iter()
        .take(AUDIT_PAGE as usize)
        .map(|(ms, id)| json!({"_id": id, "date": ms, "kind": "flag"}))
        .collect();
    let more = links && hits.len() > items.len();
    (items, more)
}

fn serve(log: &[(i64, String)], cursor: &AuditCursor) -> Vec<Value> {
    serve_linked(log, cursor, true).0
}

fn fresh(previous: Option<Previous>, after: Option<i64>) -> AuditCursor {
    AuditCursor {
        after,
        before: None,
        boundary: Vec::new(),
        high: previous.as_ref().and_then(|p| p.high.clone()),
        previous,
        forced: None,
        changed: false,
        read: false,
    }
}

/// Pages `log` from `cursor` to the end (`links`: the server links next pages); returns the
/// ids read and the pages asked.
fn read_all_with(
    log: &[(i64, String)],
    cursor: &mut AuditCursor,
    links: bool,
) -> (BTreeSet<String>, usize) {
    let mut ids = BTreeSet::new();
    let mut pages = 0;
    while !cursor.read {
        pages += 1;
        assert!(pages < 1_000, "paging never ends");
        let (items, linked) = serve_linked(log, cursor, links);
        for item in &items {
            ids.insert(item["_id"].as_str().unwrap_or_default().to_owned());
        }
        assert_eq!(step(cursor, &items, linked), None);
        // The cursor survives its checkpoint.
        let text = send::to_text(cursor).expect("text");
        *cursor = send::from_text(&text).expect("reads");
    }
    (ids, pages)
}

fn read_all(log: &[(i64, String)], cursor: &mut AuditCursor) -> (BTreeSet<String>, usize) {
    read_all_with(log, cursor, true)
}

/// A log over few milliseconds (ties everywhere), at most 11 entries a millisecond: with
/// the 8 a test may add, never a page of one millisecond.
fn log_strategy() -> impl Strategy<Value = Vec<(i64, String)>> {
    proptest::collection::vec(1_000i64..1_040, 0..120).prop_map(|times| {
        let mut per: std::collections::BTreeMap<i64, usize> = Default::default();
        let mut out = Vec::new();
        for (i, ms) in times.into_iter().enumerate() {
            let n = per.entry(ms).or_default();
            if *n < 11 {
                *n += 1;
                out.push((ms, format!("e{i:04}")));
            }
        }
        out
    })
}

proptest! {
    /// Paged by `before` with the oldest millisecond asked again, every entry is read,
    /// however many share a millisecond (fewer than a page), and the run's high-water is the
    /// newest millisecond with its ids.
    #[test]
    fn paging_by_before_reads_every_entry_even_where_milliseconds_tie(
        log in log_strategy(),
        links in any::<bool>(),
    ) {
        let mut cursor = fresh(None, None);
        let (ids, _) = read_all_with(&log, &mut cursor, links);
        let want: BTreeSet<String> = log.iter().map(|(_, id)| id.clone()).collect();
        prop_assert_eq!(&ids, &want);
        if let Some(newest) = log.iter().map(|(ms, _)| *ms).max() {
            let high = cursor.high.clone().expect("a high-water");
            prop_assert_eq!(high.ms, newest);
            let at: BTreeSet<String> = log.iter().filter(|(ms, _)| *ms == newest).map(|(_, id)| id.clone()).collect();
            prop_assert_eq!(high.ids.into_iter().collect::<BTreeSet<_>>(), at);
        }
    }

    /// A second run from the first one's high-water reads the entries written since (a new
    /// one in the very millisecond included), sees a change exactly when there is one, and
    /// asks one page when nothing is new.
    #[test]
    fn a_run_after_a_completed_one_reads_only_what_is_new_and_sees_a_change_only_then(
        log in log_strategy(),
        added in proptest::collection::vec(0i64..5, 0..8),
    ) {
        prop_assume!(!log.is_empty());
        let mut first = fresh(None, None);
        read_all(&log, &mut first);
        let high = first.high.clone().expect("a high-water");
        let mut later = log.clone();
        // New entries at or after the high-water's millisecond (the same one included).
        for (i, d) in added.iter().enumerate() {
            later.push((high.ms + d, format!("n{i:04}")));
        }
        let previous = Previous { run: 1, high: Some(high.clone()) };
        let from = after(Some(&previous), None);
        let mut second = fresh(Some(previous), from);
        let (ids, pages) = read_all(&later, &mut second);
        let new: BTreeSet<String> = (0..added.len()).map(|i| format!("n{i:04}")).collect();
        prop_assert!(new.is_subset(&ids));
        // Only the overlap of the high-water's millisecond is read again.
        prop_assert!(ids.difference(&new).all(|id| high.ids.contains(id)));
        prop_assert_eq!(second.changed, !added.is_empty());
        let decision = decide("acc", &second);
        prop_assert_eq!(decision.refresh, !added.is_empty());
        if added.is_empty() {
            prop_assert_eq!(pages, 1);
            prop_assert_eq!(decision.high, Some(high));
        }
    }
}

#[test]
fn the_log_is_asked_from_the_last_completed_runs_newest_millisecond_else_the_stored_one() {
    let previous = Previous {
        run: 3,
        high: Some(HighWater {
            ms: 1_000,
            ids: vec!["a".into()],
        }),
    };
    assert_eq!(after(Some(&previous), Some(2_000)), Some(999));
    assert_eq!(after(None, Some(2_000)), Some(1_999));
    assert_eq!(after(None, None), None);
    let empty = Previous { run: 3, high: None };
    assert_eq!(after(Some(&empty), Some(2_000)), None);
}

#[test]
fn a_page_of_one_millisecond_already_read_is_passed_with_a_warning_not_looped() {
    let log: Vec<(i64, String)> = (0..25).map(|i| (500, format!("t{i:02}"))).collect();
    let mut cursor = fresh(None, None);
    let first = serve(&log, &cursor);
    assert_eq!(step(&mut cursor, &first, true), None);
    assert_eq!(cursor.before, Some(501));
    let again = serve(&log, &cursor);
    let warning = step(&mut cursor, &again, true).expect("a warning");
    assert!(warning.contains("500"), "{warning}");
    assert_eq!(cursor.before, Some(500));
    let rest = serve(&log, &cursor);
    assert!(rest.is_empty());
    assert_eq!(step(&mut cursor, &rest, false), None);
    assert!(cursor.read);
}

#[test]
fn the_lists_are_re_read_on_a_first_run_on_full_and_on_a_change_only() {
    let previous = Some(Previous {
        run: 7,
        high: Some(HighWater {
            ms: 10,
            ids: vec!["a".into()],
        }),
    });
    let mut c = fresh(previous, Some(9));
    c.read = true;
    let quiet = decide("acc", &c);
    assert!(!quiet.refresh);
    assert!(quiet.reason.contains("run 7"), "{}", quiet.reason);
    c.changed = true;
    assert!(decide("acc", &c).refresh);
    c.changed = false;
    c.forced = Some("full".into());
    assert!(decide("acc", &c).refresh);
    let first = fresh(None, None);
    let d = decide(
        "acc",
        &AuditCursor {
            forced: Some("first".into()),
            ..first
        },
    );
    assert!(d.refresh);
    assert_eq!(d.account, "acc");
}
