//! Jira Cloud pagination [jr-v3]: the `nextPageToken` cursor of `/rest/api/3/search/jql` and
//! `/rest/api/3/changelog/bulkfetch` (absent or null on the last page, which also says
//! `isLast`), and `startAt`/`maxResults` of the older list endpoints (comments, worklogs,
//! project search, agile boards and sprints), whose pages carry `isLast`, `total`, both or
//! neither. The server may lower `maxResults` below what was asked (agile caps it at 50
//! [jr-jsw18382]), so the next `startAt` advances by the items that came back, never by the
//! page size asked for.

use serde_json::Value;
use url::Url;

use super::StopReason;
use super::walk::{Verdict, Walk, with_query};

/// Cursor pagination by `nextPageToken`.
#[derive(Debug, Clone)]
pub struct TokenPager {
    first: Url,
    walk: Walk<Option<String>>,
}

impl TokenPager {
    /// Starts at `first` (its query as the caller built it: `jql`, `fields`, `maxResults`),
    /// fetching at most `cap` pages.
    pub fn new(first: Url, cap: u32) -> Self {
        Self {
            first,
            walk: Walk::new(None, cap),
        }
    }

    /// The GET form of the next request: `first` plus `nextPageToken` after the first page;
    /// `None` when done.
    pub fn next_url(&self) -> Option<Url> {
        match self.walk.next()? {
            None => Some(self.first.clone()),
            Some(token) => Some(with_query(&self.first, &[("nextPageToken", token)])),
        }
    }

    /// Whether a next request is due (for the POST form, whose body carries [`Self::token`]).
    pub fn has_next(&self) -> bool {
        self.walk.next().is_some()
    }

    /// The token the next request carries (`None` on the first page or when done): the
    /// `nextPageToken` field of a POST body.
    pub fn token(&self) -> Option<&str> {
        self.walk.next()?.as_deref()
    }

    /// Records the parsed body of the page just fetched.
    pub fn record(&mut self, body: &Value) {
        if !self.has_next() {
            return;
        }
        self.walk.advance(token_verdict(body));
    }

    /// Pages recorded so far.
    pub fn pages_fetched(&self) -> u32 {
        self.walk.fetched()
    }

    /// Why it stopped, once it has.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.walk.stop()
    }
}

/// `isLast: true` ends the walk; else a non-empty string token continues it; an absent, null
/// or empty token ends it unless `isLast: false` contradicts that.
fn token_verdict(body: &Value) -> Verdict<Option<String>> {
    let page = body.as_object().ok_or(StopReason::Malformed)?;
    let is_last = match page.get("isLast") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(StopReason::Malformed),
    };
    if is_last == Some(true) {
        return Ok(None);
    }
    match page.get("nextPageToken") {
        Some(Value::String(token)) if !token.is_empty() => Ok(Some(Some(token.clone()))),
        None | Some(Value::Null) | Some(Value::String(_)) if is_last != Some(false) => Ok(None),
        // A token of another type, or "not the last page" without a way to the next.
        _ => Err(StopReason::Malformed),
    }
}

/// Offset pagination by `startAt`/`maxResults`.
#[derive(Debug, Clone)]
pub struct StartAtPager {
    base: Url,
    items_key: String,
    max_results: u32,
    walk: Walk<u64>,
}

impl StartAtPager {
    /// Starts at `startAt=0` of `base`, asking `max_results` per page, reading each page's
    /// items from the array `items_key` (`values` for agile and project search, `comments`,
    /// `worklogs`), fetching at most `cap` pages.
    pub fn new(base: Url, items_key: &str, max_results: u32, cap: u32) -> Self {
        Self {
            base,
            items_key: items_key.to_owned(),
            max_results: max_results.max(1),
            walk: Walk::new(0, cap),
        }
    }

    /// The URL to fetch next, or `None` when done.
    pub fn next_url(&self) -> Option<Url> {
        let start_at = self.walk.next()?.to_string();
        let max_results = self.max_results.to_string();
        Some(with_query(
            &self.base,
            &[("startAt", &start_at), ("maxResults", &max_results)],
        ))
    }

    /// Records the parsed body of the page fetched from [`StartAtPager::next_url`].
    pub fn record(&mut self, body: &Value) {
        let Some(&asked) = self.walk.next() else {
            return;
        };
        let verdict = start_at_verdict(body, &self.items_key, asked, self.max_results);
        self.walk.advance(verdict);
    }

    /// Pages recorded so far.
    pub fn pages_fetched(&self) -> u32 {
        self.walk.fetched()
    }

    /// Why it stopped, once it has.
    pub fn stop_reason(&self) -> Option<StopReason> {
        self.walk.stop()
    }
}

/// The end when `isLast` says so, when the page is empty, when `startAt + len ≥ total`, or —
/// with neither `isLast` nor `total` — when the page is shorter than the server's `maxResults`.
fn start_at_verdict(body: &Value, items_key: &str, asked: u64, max_results: u32) -> Verdict<u64> {
    let page = body.as_object().ok_or(StopReason::Malformed)?;
    let len = page
        .get(items_key)
        .and_then(Value::as_array)
        .ok_or(StopReason::Malformed)?
        .len() as u64;
    let number = |key: &str| match page.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(v) => v.as_u64().map(Some).ok_or(StopReason::Malformed),
    };
    let start_at = number("startAt")?.unwrap_or(asked);
    if start_at < asked {
        // The server ignored `startAt` and served an earlier page again.
        return Err(StopReason::RepeatedCursor);
    }
    if start_at > asked {
        return Err(StopReason::Malformed);
    }
    let total = number("total")?;
    let served = number("maxResults")?.unwrap_or(u64::from(max_results));
    let is_last = match page.get("isLast") {
        None | Some(Value::Null) => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(StopReason::Malformed),
    };
    let next = start_at.saturating_add(len);
    if is_last == Some(true) || len == 0 {
        return Ok(None);
    }
    if let Some(total) = total {
        return Ok((next < total).then_some(next));
    }
    if is_last.is_none() && len < served {
        return Err(StopReason::ShortPage);
    }
    Ok(Some(next))
}
