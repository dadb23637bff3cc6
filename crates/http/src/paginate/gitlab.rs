//! GitLab REST pagination [gl-rest]: offset (`page`/`per_page` ≤ 100, next page from
//! `x-next-page`, empty on the last page, or from `Link: rel="next"` when a proxy dropped the
//! custom headers) and keyset (`pagination=keyset` with `order_by`/`sort`; the next page only
//! from `Link: rel="next"`, the end when there is none). Totals (`x-total`, `x-total-pages`,
//! `rel="last"`) are never read: GitLab omits them past 10,000 results [gl-rest].

use http::HeaderMap;
use url::Url;

use super::StopReason;
use super::walk::{Verdict, Walk, link_next, query_value, with_query};

/// GitLab's largest `per_page` [gl-rest].
pub const MAX_PER_PAGE: u32 = 100;

/// Offset pagination: pages 1, 2, … as `x-next-page` (or `rel="next"`) names them.
#[derive(Debug, Clone)]
pub struct OffsetPager {
    first: Url,
    walk: Walk<Url>,
}

impl OffsetPager {
    /// Starts at page 1 of `base` with `per_page` items (1–100), fetching at most `cap` pages.
    pub fn new(base: &Url, per_page: u32, cap: u32) -> Self {
        let per_page = per_page.clamp(1, MAX_PER_PAGE).to_string();
        let first = with_query(base, &[("per_page", &per_page), ("page", "1")]);
        Self {
            walk: Walk::new(first.clone(), cap),
            first,
        }
    }

    /// The URL to fetch next, or `None` when done.
    pub fn next_url(&self) -> Option<Url> {
        self.walk.next().cloned()
    }

    /// Records the headers of the page fetched from [`OffsetPager::next_url`].
    pub fn record(&mut self, headers: &HeaderMap) {
        let Some(fetched) = self.walk.next().cloned() else {
            return;
        };
        let verdict = offset_verdict(headers, &fetched, &self.first);
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

/// The page number after the offset page fetched from `fetched` (`page=` in its query, 1
/// without), as [`OffsetPager`] reads it: `Ok(None)` on the last page. For a caller that keeps
/// the page number in its own checkpoint rather than a pager.
pub fn next_offset_page(headers: &HeaderMap, fetched: &Url) -> Result<Option<u32>, StopReason> {
    let Some(next) = offset_verdict(headers, fetched, fetched)? else {
        return Ok(None);
    };
    query_value(&next, "page")
        .and_then(|p| p.parse().ok())
        .map(Some)
        .ok_or(StopReason::Malformed)
}

/// The keyset page after the one fetched from `fetched`, as [`KeysetPager`] reads it: the
/// `Link: rel="next"` target, which must stay on `fetched`'s scheme, host, port and path;
/// `Ok(None)` without one (the last page). For a caller that keeps the link in its own
/// checkpoint rather than a pager.
pub fn next_keyset_url(headers: &HeaderMap, fetched: &Url) -> Result<Option<Url>, StopReason> {
    link_next(headers, fetched, fetched)
}

/// The next page from `x-next-page` when sent (empty: the last page), else from the `Link`.
fn offset_verdict(headers: &HeaderMap, fetched: &Url, first: &Url) -> Verdict<Url> {
    let Some(raw) = headers.get("x-next-page") else {
        return link_next(headers, fetched, first);
    };
    let raw = raw.to_str().map_err(|_| StopReason::Malformed)?.trim();
    if raw.is_empty() {
        return Ok(None);
    }
    let next: u64 = raw.parse().map_err(|_| StopReason::Malformed)?;
    let page: u64 = query_value(fetched, "page")
        .and_then(|p| p.parse().ok())
        .unwrap_or(1);
    if next <= page {
        return Err(StopReason::RepeatedCursor);
    }
    if next != page + 1 {
        // A jump would skip whole pages of items.
        return Err(StopReason::Malformed);
    }
    Ok(Some(with_query(fetched, &[("page", &next.to_string())])))
}

/// Keyset pagination: the next page only from `Link: rel="next"` (carrying `id_after=` or
/// `cursor=`); no link means the end [gl-rest].
#[derive(Debug, Clone)]
pub struct KeysetPager {
    first: Url,
    walk: Walk<Url>,
}

impl KeysetPager {
    /// Starts at `base` with `pagination=keyset`, the mandatory `order_by` and `sort`, and
    /// `per_page` items (1–100), fetching at most `cap` pages. Only some lists support keyset
    /// (projects, project jobs, project issues since 18.3, users, audit events…) [gl-rest].
    pub fn new(base: &Url, order_by: &str, sort: &str, per_page: u32, cap: u32) -> Self {
        let per_page = per_page.clamp(1, MAX_PER_PAGE).to_string();
        let first = with_query(
            base,
            &[
                ("pagination", "keyset"),
                ("order_by", order_by),
                ("sort", sort),
                ("per_page", &per_page),
            ],
        );
        Self {
            walk: Walk::new(first.clone(), cap),
            first,
        }
    }

    /// The URL to fetch next, or `None` when done.
    pub fn next_url(&self) -> Option<Url> {
        self.walk.next().cloned()
    }

    /// Records the headers of the page fetched from [`KeysetPager::next_url`].
    pub fn record(&mut self, headers: &HeaderMap) {
        let Some(fetched) = self.walk.next().cloned() else {
            return;
        };
        let verdict = link_next(headers, &fetched, &self.first);
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
