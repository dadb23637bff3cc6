//! The pure side of paging a Linear connection: the page size (halved on "query too complex",
//! grown back after successes, fitted under Linear's per-query maximum before sending), the
//! `$filter` a page asks with, the watermark family a collection is recorded under, and the
//! cursors a stage commits with each page, with their transitions. No I/O: the stages
//! ([`super::list`], [`super::issues`]) send and store.

use headroom_http::ApiError;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};

use crate::complexity::{self, MAX_PER_QUERY};
use crate::documents::Document;

/// The page size asked for by default and grown back to: Linear's own default.
pub const DEFAULT_FIRST: u32 = 50;

/// Successes in a row before a shrunk page size doubles back (as GitHub's resource limits).
pub const GROW_AFTER: u32 = 3;

/// A page size that halves when Linear refuses a page as too complex and doubles back, up
/// to [`DEFAULT_FIRST`], after [`GROW_AFTER`] successes in a row. Kept in the cursor.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageSize {
    /// The `first` to ask for next (before fitting under the maximum).
    pub size: u32,
    /// Successes in a row at this size.
    #[serde(default)]
    pub streak: u32,
}

impl Default for PageSize {
    fn default() -> Self {
        Self {
            size: DEFAULT_FIRST,
            streak: 0,
        }
    }
}

impl PageSize {
    /// The size, held to 1..=[`DEFAULT_FIRST`] whatever a stored cursor says.
    pub fn get(self) -> u32 {
        self.size.clamp(1, DEFAULT_FIRST)
    }

    /// A page of `asked` was too complex: half of it, or `None` when one row already was.
    pub fn halved_from(self, asked: u32) -> Option<Self> {
        let asked = asked.clamp(1, DEFAULT_FIRST);
        (asked > 1).then(|| Self {
            size: (asked / 2).min(self.get()),
            streak: 0,
        })
    }

    /// A page was answered: after [`GROW_AFTER`] in a row the size doubles, up to the default.
    pub fn after_success(self) -> Self {
        let streak = self.streak.saturating_add(1);
        if streak >= GROW_AFTER && self.get() < DEFAULT_FIRST {
            Self {
                size: self.get().saturating_mul(2).min(DEFAULT_FIRST),
                streak: 0,
            }
        } else {
            Self {
                size: self.get(),
                streak: streak.min(GROW_AFTER),
            }
        }
    }
}

/// The largest size up to `size`, halving, whose estimate stays within `max` (1 at least:
/// a single row over the maximum is Linear's to refuse). `cost` is the estimate at a size.
pub fn fitting(size: u32, max: u64, cost: impl Fn(u32) -> u64) -> u32 {
    let mut n = size.max(1);
    while n > 1 && cost(n) > max {
        n /= 2;
    }
    n
}

/// The estimate of `doc` sent with `variables`; an inestimable document is a bug of ours.
pub fn estimate(doc: &Document, variables: &Value) -> Result<u64, String> {
    complexity::estimate(doc.text, variables).map_err(|e| format!("{}: {e}", doc.name))
}

/// The `first` to send for `doc` at `size`, fitted under Linear's per-query maximum, with
/// its variables and estimate.
pub fn fitted(
    doc: &Document,
    size: PageSize,
    variables: impl Fn(u32) -> Value,
) -> Result<(u32, Value, u64), String> {
    // A document we cannot estimate is refused before anything is sent.
    estimate(doc, &variables(1))?;
    let cost = |n: u32| estimate(doc, &variables(n)).unwrap_or(u64::MAX);
    let first = fitting(size.get(), MAX_PER_QUERY, cost);
    let vars = variables(first);
    let points = estimate(doc, &vars)?;
    Ok((first, vars, points))
}

/// The variables of a page of a top-level connection: `filter` only where the document
/// takes one.
pub fn list_variables(doc: &Document, first: u32, after: Option<&str>, filter: &Value) -> Value {
    let mut v = json!({ "first": first, "after": after });
    if doc.incremental {
        v["filter"] = filter.clone();
    }
    v
}

/// `$filter`: what changed since `since` (none on a first collection) and, for a stage
/// narrowed by team (`by_team`), only the selected teams' (none selected: every team).
/// `null` when it asks for everything.
pub fn filter(since: Option<&str>, teams: &[String], by_team: bool) -> Value {
    let mut f = Map::new();
    if let Some(since) = since {
        f.insert("updatedAt".into(), json!({ "gt": since }));
    }
    if by_team && !teams.is_empty() {
        f.insert("team".into(), json!({ "key": { "in": teams } }));
    }
    if f.is_empty() {
        Value::Null
    } else {
        Value::Object(f)
    }
}

/// The watermark family a collection of `entity` is recorded under: the entity, or, narrowed
/// to some teams, the entity and their keys (`issues:ENG,OPS`), so that a collection of some
/// teams never stands for the others'.
pub fn family(entity: &str, teams: &[String], by_team: bool) -> String {
    if by_team && !teams.is_empty() {
        let mut keys = teams.to_vec();
        keys.sort();
        keys.dedup();
        format!("{entity}:{}", keys.join(","))
    } else {
        entity.to_owned()
    }
}

/// Whether Linear refused the document as over its per-query maximum: HTTP 400 "Query too
/// complex" (not retryable as it is; a smaller page is).
pub fn too_complex(e: &ApiError) -> bool {
    matches!(e, ApiError::Status { status: 400, message } if message.to_ascii_lowercase().contains("too complex"))
}

/// The `errors` of an answer, as one message; `None` when there are none.
pub fn errors(body: &Value) -> Option<String> {
    let list = body.get("errors")?.as_array()?;
    if list.is_empty() {
        return None;
    }
    let messages: Vec<&str> = list
        .iter()
        .map(|e| {
            e.get("message")
                .and_then(Value::as_str)
                .unwrap_or("GraphQL error")
        })
        .collect();
    Some(messages.join("; "))
}

/// A connection's rows and the cursor of the page after it (`None`: the last page). A next
/// page without a cursor to reach it is an answer we cannot follow.
pub fn connection(conn: &Value) -> Result<(Vec<Value>, Option<String>), String> {
    let nodes = match conn.get("nodes") {
        Some(Value::Array(nodes)) => nodes.clone(),
        None | Some(Value::Null) => Vec::new(),
        Some(other) => return Err(format!("nodes is not a list: {other}")),
    };
    let info = conn.get("pageInfo").unwrap_or(&Value::Null);
    let has_next = info
        .get("hasNextPage")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    if !has_next {
        return Ok((nodes, None));
    }
    match info.get("endCursor").and_then(Value::as_str) {
        Some(end) => Ok((nodes, Some(end.to_owned()))),
        None => Err("hasNextPage without an endCursor".into()),
    }
}

/// Where a top-level connection's collection stands, stored as the stage's cursor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ListCursor {
    /// The Relay cursor of the next page (`None`: the first).
    pub after: Option<String>,
    /// The page size.
    #[serde(default)]
    pub size: PageSize,
    /// When this collection started: the family's watermark once it is finished.
    pub started_ms: i64,
    /// The `updatedAt` it asks after (kept so that a resume asks the same).
    pub since: Option<String>,
}

/// One issue whose history is still owed, and the page of it to read next.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct OwedHistory {
    /// The issue's id.
    pub issue: String,
    /// The Relay cursor of its next history page (`None`: the first).
    pub after: Option<String>,
}

/// Where the issues stage stands: the list of issues, and the history owed by the pages of
/// it already stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct IssuesCursor {
    /// The issues list.
    pub list: ListCursor,
    /// Every page of issues is stored.
    #[serde(default)]
    pub listed: bool,
    /// History owed by the issue pages stored.
    #[serde(default)]
    pub owed: Vec<OwedHistory>,
    /// The history pages' size.
    #[serde(default)]
    pub history_size: PageSize,
}

/// Takes the history nested in an issue node of a page (`history(first: N)`) out of it: its
/// entries, and what the issue still owes — nothing when the nested page was its whole
/// history, the rest after the nested page's cursor when it has more, and the whole history
/// when the node carries none (an answer without it is read the long way, never lost).
pub fn nested_history(issue: &mut Value) -> Result<(Vec<Value>, Option<OwedHistory>), String> {
    let id = issue
        .get("id")
        .and_then(Value::as_str)
        .ok_or("an issue without an id")?
        .to_owned();
    let nested = issue.as_object_mut().and_then(|o| o.remove("history"));
    match nested {
        None | Some(Value::Null) => Ok((
            Vec::new(),
            Some(OwedHistory {
                issue: id,
                after: None,
            }),
        )),
        Some(conn) => {
            let (entries, next) = connection(&conn).map_err(|e| format!("{id}'s history: {e}"))?;
            let owed = next.map(|after| OwedHistory {
                issue: id,
                after: Some(after),
            });
            Ok((entries, owed))
        }
    }
}

impl IssuesCursor {
    /// After a page of issues whose next page is `next`: `owed` are its issues whose history
    /// did not fit the page ([`nested_history`]), each from where its nested page ended.
    pub fn after_issue_page(mut self, owed: Vec<OwedHistory>, next: Option<String>) -> Self {
        self.owed = owed;
        self.listed = next.is_none();
        self.list.after = next;
        self
    }

    /// After the history page `owed` asked for, whose next page is `next`.
    pub fn after_history_page(mut self, owed: &OwedHistory, next: Option<String>) -> Self {
        if let Some(i) = self.owed.iter().position(|o| o.issue == owed.issue) {
            match next {
                Some(after) => self.owed[i].after = Some(after),
                None => {
                    self.owed.remove(i);
                }
            }
        }
        self
    }

    /// Nothing left: every issue page and every history page owed is stored.
    pub fn finished(&self) -> bool {
        self.listed && self.owed.is_empty()
    }
}

/// A cursor as stored.
pub fn to_text<T: Serialize>(cursor: &T) -> Result<String, String> {
    serde_json::to_string(cursor).map_err(|e| e.to_string())
}

/// A stored cursor.
pub fn from_text<T: for<'de> Deserialize<'de>>(text: &str) -> Result<T, String> {
    serde_json::from_str(text).map_err(|e| format!("unreadable cursor {text:?}: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::documents;
    use proptest::prelude::*;

    #[test]
    fn a_filter_asks_for_what_changed_and_the_selected_teams() {
        assert_eq!(filter(None, &[], true), Value::Null);
        assert_eq!(
            filter(Some("2026-12-01T00:00:00Z"), &[], true),
            json!({ "updatedAt": { "gt": "2026-12-01T00:00:00Z" } })
        );
        let teams = vec!["ENG".to_owned(), "OPS".to_owned()];
        assert_eq!(
            filter(None, &teams, true),
            json!({ "team": { "key": { "in": ["ENG", "OPS"] } } })
        );
        assert_eq!(filter(None, &teams, false), Value::Null);
        assert_eq!(family("issues", &teams, true), "issues:ENG,OPS");
        assert_eq!(family("issues", &[], true), "issues");
        assert_eq!(family("users", &teams, false), "users");
    }

    #[test]
    fn linears_too_complex_answer_is_told_from_other_refusals() {
        let body =
            r#"{"errors":[{"message":"Query too complex","extensions":{"code":"INPUT_ERROR"}}]}"#;
        assert!(too_complex(&ApiError::status(400, body.as_bytes())));
        let other = r#"{"errors":[{"message":"Argument Validation Error"}]}"#;
        assert!(!too_complex(&ApiError::status(400, other.as_bytes())));
        assert!(!too_complex(&ApiError::status(403, body.as_bytes())));
    }

    #[test]
    fn a_connection_without_a_cursor_to_its_next_page_is_refused() {
        let last = json!({ "nodes": [{"id": "a"}], "pageInfo": { "hasNextPage": false } });
        assert_eq!(connection(&last), Ok((vec![json!({"id": "a"})], None)));
        let next = json!({ "nodes": [], "pageInfo": { "hasNextPage": true, "endCursor": "c" } });
        assert_eq!(connection(&next), Ok((vec![], Some("c".into()))));
        let broken = json!({ "nodes": [], "pageInfo": { "hasNextPage": true } });
        assert!(connection(&broken).is_err());
    }

    #[test]
    fn only_an_issue_whose_nested_history_has_a_next_page_owes_history_requests() {
        let entry = json!({ "id": "h1" });
        let mut whole = json!({ "id": "i1", "title": "t", "history": {
            "nodes": [entry], "pageInfo": { "hasNextPage": false, "endCursor": "e" } } });
        assert_eq!(nested_history(&mut whole), Ok((vec![entry.clone()], None)));
        assert_eq!(
            whole,
            json!({ "id": "i1", "title": "t" }),
            "stored without it"
        );
        let mut longer = json!({ "id": "i2", "history": {
            "nodes": [entry], "pageInfo": { "hasNextPage": true, "endCursor": "e" } } });
        let owed = OwedHistory {
            issue: "i2".into(),
            after: Some("e".into()),
        };
        assert_eq!(nested_history(&mut longer), Ok((vec![entry], Some(owed))));
        let mut without = json!({ "id": "i3" });
        let whole_history = OwedHistory {
            issue: "i3".into(),
            after: None,
        };
        assert_eq!(
            nested_history(&mut without),
            Ok((vec![], Some(whole_history)))
        );
        let mut broken = json!({ "id": "i4", "history": { "pageInfo": { "hasNextPage": true } } });
        assert!(nested_history(&mut broken).is_err());
        assert!(nested_history(&mut json!({ "title": "no id" })).is_err());
    }

    #[test]
    fn an_issues_page_with_its_nested_history_stays_well_under_linears_maximum() {
        let doc = &documents::ISSUES;
        let vars = |n: u32| json!({ "first": n, "after": null, "filter": null });
        let (first, _, points) = fitted(doc, PageSize::default(), vars).expect("estimable");
        assert_eq!(first, DEFAULT_FIRST);
        assert!(points <= MAX_PER_QUERY / 2, "{points}");
        // The nested history is priced: the page costs more than it would without it.
        let without = doc.text.replace(
            &format!("history(first: {})", documents::NESTED_HISTORY),
            "history(first: 0)",
        );
        let bare = complexity::estimate(&without, &vars(DEFAULT_FIRST)).expect("estimable");
        assert!(
            points > bare + u64::from(DEFAULT_FIRST) * 20,
            "{points} vs {bare}"
        );
    }

    #[test]
    fn every_page_sent_is_fitted_under_linears_maximum() {
        for d in documents::ALL.iter().filter(|d| d.entity != "viewer") {
            let (first, _, points) = fitted(
                d,
                PageSize::default(),
                |n| json!({ "first": n, "after": null, "filter": null, "issue": "i" }),
            )
            .expect("estimable");
            assert!(points <= MAX_PER_QUERY, "{}", d.name);
            assert_eq!(first, DEFAULT_FIRST, "{}: the default page fits", d.name);
        }
    }

    proptest! {
        /// Halving reaches 1 and stops; growth after successes returns to the default and
        /// never passes it; a size read from any cursor is a valid `first`.
        #[test]
        fn the_page_size_halves_to_one_and_grows_back_to_the_default(
            stored in any::<u32>(), streak in any::<u32>(), refusals in 0usize..12,
        ) {
            let mut size = PageSize { size: stored, streak };
            prop_assert!((1..=DEFAULT_FIRST).contains(&size.get()));
            for _ in 0..refusals {
                let asked = size.get();
                match size.halved_from(asked) {
                    Some(next) => {
                        prop_assert!(next.get() < asked);
                        prop_assert!(next.get() >= asked / 2);
                        size = next;
                    }
                    None => prop_assert_eq!(asked, 1),
                }
            }
            let mut successes = 0u32;
            while size.get() < DEFAULT_FIRST {
                let before = size.get();
                size = size.after_success();
                prop_assert!(size.get() == before || size.get() == (before * 2).min(DEFAULT_FIRST));
                successes += 1;
                prop_assert!(successes <= GROW_AFTER * 7, "grows back in bounded steps");
            }
            prop_assert_eq!(size.after_success().get(), DEFAULT_FIRST);
        }

        /// The fitted size is the first of the asked one's halvings under the maximum.
        #[test]
        fn a_fitted_page_stays_under_the_maximum(size in 1u32..=500, per_row in 1u64..2_000, fixed in 0u64..5_000) {
            let cost = |n: u32| fixed + per_row * u64::from(n);
            let n = fitting(size, MAX_PER_QUERY, cost);
            prop_assert!(n >= 1 && n <= size);
            prop_assert!(cost(n) <= MAX_PER_QUERY || n == 1);
            // Every larger size of the halving chain was over the maximum.
            let mut m = size;
            while m > n {
                prop_assert!(cost(m) > MAX_PER_QUERY, "{} was under", m);
                m /= 2;
            }
            prop_assert_eq!(m, n);
        }

        /// A kill after any page resumes from the stored cursor and reads every history
        /// page exactly once, every issue page exactly once; an issue's first history page
        /// comes nested in its issue page, and only an issue with more is owed the rest.
        #[test]
        fn a_resumed_issues_cursor_reads_every_page_exactly_once(
            pages in proptest::collection::vec(proptest::collection::vec(1usize..4, 0..6), 1..6),
            kills in proptest::collection::vec(any::<bool>(), 0..80),
        ) {
            // `pages[p][i]`: how many history pages issue `i` of issue page `p` has, the
            // first nested in the issue page.
            let mut expected = Vec::new();
            for (p, page) in pages.iter().enumerate() {
                expected.push(format!("issues/{p}"));
                for (i, n) in page.iter().enumerate() {
                    for h in 1..*n { expected.push(format!("i{p}-{i}/{h}")); }
                }
            }
            let start = IssuesCursor {
                list: ListCursor { after: None, size: PageSize::default(), started_ms: 0, since: None },
                listed: false, owed: Vec::new(), history_size: PageSize::default(),
            };
            let mut stored = to_text(&start).expect("serializes");
            let mut read = Vec::new();
            let mut kill = kills.into_iter();
            loop {
                // A resume: only what was stored is known.
                let mut cursor: IssuesCursor = from_text(&stored).expect("parses");
                if cursor.finished() { break; }
                let next = if let Some(owed) = cursor.owed.first().cloned() {
                    let (p, i) = owed.issue[1..].split_once('-').map(|(p, i)| (p.parse::<usize>().unwrap_or(0), i.parse::<usize>().unwrap_or(0))).unwrap_or((0, 0));
                    let h: usize = owed.after.as_deref().map_or(0, |a| a.parse().unwrap_or(0));
                    read.push(format!("{}/{h}", owed.issue));
                    let more = (h + 1 < pages[p][i]).then(|| (h + 1).to_string());
                    cursor.after_history_page(&owed, more)
                } else {
                    let p: usize = cursor.list.after.as_deref().map_or(0, |a| a.parse().unwrap_or(0));
                    read.push(format!("issues/{p}"));
                    let owed = (0..pages[p].len())
                        .filter(|&i| pages[p][i] > 1)
                        .map(|i| OwedHistory { issue: format!("i{p}-{i}"), after: Some("1".into()) })
                        .collect();
                    let more = (p + 1 < pages.len()).then(|| (p + 1).to_string());
                    cursor.after_issue_page(owed, more)
                };
                // Killed before the write: the page is read again on resume.
                if kill.next() == Some(true) { read.pop(); continue; }
                stored = to_text(&next).expect("serializes");
                cursor = next;
                prop_assert!(read.len() <= expected.len() || cursor.finished());
            }
            prop_assert_eq!(read, expected);
        }
    }
}
