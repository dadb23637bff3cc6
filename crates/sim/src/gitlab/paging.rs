//! GitLab's offset pagination: `page` and `per_page` (20 by default, at most 100), answered
//! with `X-Page`, `X-Per-Page`, `X-Next-Page` (empty on the last page), `X-Prev-Page`,
//! `X-Total`, `X-Total-Pages` and a `Link` header (`prev`, `next`, `first`, `last`). Past
//! 10,000 matching records GitLab stops counting: `X-Total`, `X-Total-Pages` and
//! `rel="last"` are left out, and only `X-Next-Page` / `rel="next"` say whether more follow.

use serde_json::Value;

use super::GlCtx;
use crate::sim::Reply;

/// Items per page when the request names none.
const DEFAULT_PER_PAGE: usize = 20;
/// The largest page GitLab serves.
const MAX_PER_PAGE: usize = 100;
/// Past this many matching records GitLab omits the totals.
pub(super) const COUNT_LIMIT: usize = 10_000;

/// Query components keep RFC 3986's unreserved characters.
const QUERY: &percent_encoding::AsciiSet = &percent_encoding::NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'_')
    .remove(b'.')
    .remove(b'~');

/// One page of `items` as a JSON array with GitLab's paging headers. `path` is the request's
/// path under `/api/v4` as the client wrote it.
pub(super) fn paged(ctx: &GlCtx, path: &str, items: Vec<Value>) -> Reply {
    paged_by(ctx, path, &items, Value::clone)
}

/// One page of `items`, only that page rendered (a listing of any size costs one page).
pub(super) fn paged_by<T>(
    ctx: &GlCtx,
    path: &str,
    items: &[T],
    render: impl Fn(&T) -> Value,
) -> Reply {
    let page = param(ctx, "page").filter(|&p| p >= 1).unwrap_or(1);
    let per_page = param(ctx, "per_page")
        .filter(|&p| p >= 1)
        .unwrap_or(DEFAULT_PER_PAGE)
        .min(MAX_PER_PAGE);
    let total = items.len();
    let counted = total <= COUNT_LIMIT;
    let pages = total.div_ceil(per_page).max(1);
    let body: Vec<Value> = items
        .iter()
        .skip((page - 1).saturating_mul(per_page))
        .take(per_page)
        .map(render)
        .collect();
    let next = (page < pages).then(|| page + 1);
    let prev = (page > 1).then(|| page.min(pages + 1) - 1);
    let url = |p: usize| page_url(ctx, path, p, per_page);
    let mut links = Vec::new();
    if let Some(p) = prev {
        links.push(format!("<{}>; rel=\"prev\"", url(p)));
    }
    if let Some(n) = next {
        links.push(format!("<{}>; rel=\"next\"", url(n)));
    }
    links.push(format!("<{}>; rel=\"first\"", url(1)));
    if counted {
        links.push(format!("<{}>; rel=\"last\"", url(pages)));
    }
    let show = |o: Option<usize>| o.map(|n| n.to_string()).unwrap_or_default();
    let reply = Reply::json(http::StatusCode::OK, &Value::Array(body))
        .header("x-page", &page.to_string())
        .header("x-per-page", &per_page.to_string())
        .header("x-next-page", &show(next))
        .header("x-prev-page", &show(prev))
        .header("link", &links.join(", "));
    if counted {
        reply
            .header("x-total", &total.to_string())
            .header("x-total-pages", &pages.to_string())
    } else {
        reply
    }
}

fn param(ctx: &GlCtx, name: &str) -> Option<usize> {
    ctx.query
        .iter()
        .find(|(k, _)| k == name)
        .and_then(|(_, v)| v.parse().ok())
}

/// The request's URL with `page` and `per_page` replaced, its other parameters kept.
fn page_url(ctx: &GlCtx, path: &str, page: usize, per_page: usize) -> String {
    let mut pairs: Vec<String> = ctx
        .query
        .iter()
        .filter(|(k, _)| k != "page" && k != "per_page")
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect();
    pairs.push(format!("page={page}"));
    pairs.push(format!("per_page={per_page}"));
    format!(
        "{}{}{path}?{}",
        ctx.base,
        super::API_PREFIX,
        pairs.join("&")
    )
}

/// `s` percent-encoded for a query component.
pub(super) fn enc(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, QUERY).to_string()
}
