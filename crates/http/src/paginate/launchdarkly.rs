//! LaunchDarkly REST pagination [ld-api] [ld-spec]: collections answer
//! `{ items, _links: { next: { href } }, totalCount }`; the walk follows `_links.next.href`,
//! resolved against the URL fetched (hrefs are usually relative, e.g.
//! `/api/v2/flags/proj?limit=20&offset=20`), and never computes offsets itself. No `next` link
//! means the last page. The page size is the caller's `limit` (pass it: the flag list's default
//! depends on the token's API version).

use serde_json::Value;
use url::Url;

use super::StopReason;
use super::walk::{Verdict, Walk, follow};

/// Pagination by `_links.next.href`.
#[derive(Debug, Clone)]
pub struct LinksPager {
    first: Url,
    walk: Walk<Url>,
}

impl LinksPager {
    /// Starts at `first` (with its `limit`), fetching at most `cap` pages.
    pub fn new(first: Url, cap: u32) -> Self {
        Self {
            walk: Walk::new(first.clone(), cap),
            first,
        }
    }

    /// The URL to fetch next, or `None` when done.
    pub fn next_url(&self) -> Option<Url> {
        self.walk.next().cloned()
    }

    /// The items of a page; empty when absent.
    pub fn items(body: &Value) -> &[Value] {
        body.get("items")
            .and_then(Value::as_array)
            .map_or(&[], Vec::as_slice)
    }

    /// Records the parsed body of the page fetched from [`LinksPager::next_url`].
    pub fn record(&mut self, body: &Value) {
        let Some(fetched) = self.walk.next().cloned() else {
            return;
        };
        let verdict = links_verdict(body, &fetched, &self.first);
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

/// A page must be an object with an `items` array; `_links.next` (absent or null at the end)
/// must carry a string `href` that stays on the first request's origin and path.
fn links_verdict(body: &Value, fetched: &Url, first: &Url) -> Verdict<Url> {
    if !body.get("items").is_some_and(Value::is_array) {
        return Err(StopReason::Malformed);
    }
    let next = match body.get("_links") {
        None | Some(Value::Null) => return Ok(None),
        Some(Value::Object(links)) => links.get("next"),
        Some(_) => return Err(StopReason::Malformed),
    };
    match next {
        None | Some(Value::Null) => Ok(None),
        Some(link) => match link.get("href") {
            Some(Value::String(href)) if !href.trim().is_empty() => follow(href, fetched, first),
            _ => Err(StopReason::Malformed),
        },
    }
}
