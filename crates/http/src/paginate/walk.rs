//! The walk every provider pager shares: the request to make next, the pages fetched against a
//! hard cap, every request already made (so a cursor, token or link that repeats stops the
//! walk instead of looping), and why it stopped. Also the guards on next links: they must stay
//! on the first request's scheme, host, port and path.

use std::collections::HashSet;
use std::hash::Hash;

use http::HeaderMap;
use url::Url;

use super::{StopReason, parse_link_headers};

/// What one page said about the next: the next request, the end, or a reason to stop.
pub(crate) type Verdict<K> = Result<Option<K>, StopReason>;

/// One step of a walk (a URL, a cursor, an offset) and what makes two steps the same page.
pub(crate) trait Step: Clone {
    /// The identity remembered to recognise a repeat.
    type Key: Eq + Hash + Clone + std::fmt::Debug;
    /// This step's identity.
    fn key(&self) -> Self::Key;
}

impl Step for Url {
    /// Everything but the fragment, with the query's pairs sorted: a link that only reorders
    /// its parameters names the same page.
    type Key = (String, Vec<(String, String)>);
    fn key(&self) -> Self::Key {
        let mut base = self.clone();
        base.set_query(None);
        base.set_fragment(None);
        let mut pairs: Vec<(String, String)> = self
            .query_pairs()
            .map(|(k, v)| (k.into_owned(), v.into_owned()))
            .collect();
        pairs.sort();
        (base.into(), pairs)
    }
}

impl Step for Option<String> {
    type Key = Self;
    fn key(&self) -> Self {
        self.clone()
    }
}

impl Step for u64 {
    type Key = Self;
    fn key(&self) -> Self {
        *self
    }
}

/// A walk over pages whose requests are `K` (a URL, a cursor, an offset).
#[derive(Debug, Clone)]
pub(crate) struct Walk<K: Step> {
    next: Option<K>,
    seen: HashSet<K::Key>,
    fetched: u32,
    cap: u32,
    stop: Option<StopReason>,
}

impl<K: Step> Walk<K> {
    /// Starts at `first`, fetching at most `cap` pages (zero fetches none).
    pub(crate) fn new(first: K, cap: u32) -> Self {
        let mut seen = HashSet::new();
        seen.insert(first.key());
        Self {
            next: Some(first),
            seen,
            fetched: 0,
            cap,
            stop: (cap == 0).then_some(StopReason::PageCap),
        }
    }

    /// The request to make next, or `None` once stopped.
    pub(crate) fn next(&self) -> Option<&K> {
        if self.stop.is_some() {
            return None;
        }
        self.next.as_ref()
    }

    /// Records one fetched page's verdict. Ignored once stopped.
    pub(crate) fn advance(&mut self, verdict: Verdict<K>) {
        if self.stop.is_some() {
            return;
        }
        self.fetched = self.fetched.saturating_add(1);
        self.stop = match verdict {
            Ok(None) => Some(StopReason::LastPage),
            Err(reason) => Some(reason),
            // Bounded by the cap, so the set stays small.
            Ok(Some(next)) if !self.seen.insert(next.key()) => Some(StopReason::RepeatedCursor),
            Ok(Some(next)) => {
                self.next = Some(next);
                (self.fetched >= self.cap).then_some(StopReason::PageCap)
            }
        };
    }

    /// Pages recorded so far.
    pub(crate) fn fetched(&self) -> u32 {
        self.fetched
    }

    /// Why it stopped, once it has.
    pub(crate) fn stop(&self) -> Option<StopReason> {
        self.stop
    }
}

/// Whether `next` stays on `first`'s scheme, host, port and path (only the query may differ):
/// a next link elsewhere would carry the credential to another place.
pub(crate) fn stays_on(first: &Url, next: &Url) -> bool {
    first.scheme() == next.scheme()
        && first.host_str() == next.host_str()
        && first.port_or_known_default() == next.port_or_known_default()
        && first.path() == next.path()
        && first.username() == next.username()
        && first.password() == next.password()
}

/// Resolves a next link's `target` against the fetched URL, refusing one that leaves `first`.
pub(crate) fn follow(target: &str, fetched: &Url, first: &Url) -> Verdict<Url> {
    let next = fetched.join(target).map_err(|_| StopReason::Malformed)?;
    if stays_on(first, &next) {
        Ok(Some(next))
    } else {
        Err(StopReason::ForeignLink)
    }
}

/// The `Link: <…>; rel="next"` of a page, guarded like [`follow`]; `Ok(None)` without one.
pub(crate) fn link_next(headers: &HeaderMap, fetched: &Url, first: &Url) -> Verdict<Url> {
    match parse_link_headers(headers)
        .into_iter()
        .find(|l| l.has_rel("next") && !l.is_template())
    {
        Some(link) if link.target.trim().is_empty() => Err(StopReason::Malformed),
        Some(link) => follow(&link.target, fetched, first),
        None => Ok(None),
    }
}

/// `url` with each of `pairs` set (replacing any earlier value of that key), other query
/// parameters kept in order.
pub(crate) fn with_query(url: &Url, pairs: &[(&str, &str)]) -> Url {
    let mut out = url.clone();
    let kept: Vec<(String, String)> = url
        .query_pairs()
        .filter(|(k, _)| !pairs.iter().any(|(name, _)| k == name))
        .map(|(k, v)| (k.into_owned(), v.into_owned()))
        .collect();
    out.query_pairs_mut()
        .clear()
        .extend_pairs(kept)
        .extend_pairs(pairs.iter().copied());
    out
}

/// The value of query parameter `name` in `url`, if present.
pub(crate) fn query_value(url: &Url, name: &str) -> Option<String> {
    url.query_pairs()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.into_owned())
}
