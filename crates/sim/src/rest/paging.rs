//! Link-header pagination of REST lists: `page`/`per_page`, the `Link` header,
//! and the reply for one page of a plain or a wrapped (`total_count` + key) list.

use super::*;

/// `page` and `per_page` (default 30, at most 100).
pub(super) fn page_params(ctx: &Ctx) -> (u64, usize) {
    let page = ctx
        .param("page")
        .and_then(|p| p.parse::<u64>().ok())
        .filter(|&p| p >= 1)
        .unwrap_or(1)
        // No list is that long; keeps page arithmetic far from overflow.
        .min(1_000_000);
    let per_page = ctx
        .param("per_page")
        .and_then(|p| p.parse::<usize>().ok())
        .filter(|&p| p >= 1)
        .map(|p| p.min(100))
        .unwrap_or(30);
    (page, per_page)
}

/// An RFC 8288 Link header. The order of rels varies from page to page, as GitHub's does.
pub(super) fn link_header(
    ctx: &Ctx,
    path: &str,
    page: u64,
    last: u64,
    has_next: bool,
) -> Option<String> {
    let others: Vec<String> = ctx
        .query
        .iter()
        .filter(|(k, _)| k != "page")
        .map(|(k, v)| {
            format!(
                "{}={}",
                percent_encoding::utf8_percent_encode(k, QUERY),
                percent_encoding::utf8_percent_encode(v, QUERY)
            )
        })
        .collect();
    let url = |n: u64| {
        let mut q = others.clone();
        q.push(format!("page={n}"));
        format!("<{}{}?{}>", ctx.base, path, q.join("&"))
    };
    let mut rels: Vec<String> = Vec::new();
    if page > 1 {
        rels.push(format!("{}; rel=\"prev\"", url(page - 1)));
    }
    if has_next {
        rels.push(format!("{}; rel=\"next\"", url(page + 1)));
        rels.push(format!("{}; rel=\"last\"", url(last.max(page + 1))));
    }
    if page > 1 {
        rels.push(format!("{}; rel=\"first\"", url(1)));
    }
    if rels.is_empty() {
        return None;
    }
    if page.is_multiple_of(2) {
        rels.reverse();
    }
    if page.is_multiple_of(3) {
        rels.rotate_left(1);
    }
    Some(rels.join(", "))
}

/// The page's items, rendered: only the page is rendered, since a full REST object costs
/// far more than the record it comes from.
pub(super) fn slice_page<T>(
    items: &[T],
    page: u64,
    per_page: usize,
    render: impl Fn(&T) -> Value,
) -> (Vec<Value>, u64, bool) {
    let total = items.len();
    let last = total.div_ceil(per_page).max(1) as u64;
    let start = ((page - 1) as usize).saturating_mul(per_page);
    let page_items: Vec<Value> = items
        .iter()
        .skip(start)
        .take(per_page)
        .map(render)
        .collect();
    (page_items, last, page < last)
}

/// A JSON array page with its Link header; `path` is the path the links use.
pub(super) fn paged<T>(ctx: &Ctx, items: &[T], path: &str, render: impl Fn(&T) -> Value) -> Reply {
    let (page, per_page) = page_params(ctx);
    let (items, last, has_next) = slice_page(items, page, per_page, render);
    let reply = Reply::ok(&Value::Array(items));
    match link_header(ctx, path, page, last, has_next) {
        Some(l) => reply.header("link", &l),
        None => reply,
    }
}

/// A `{total_count, <key>: [...]}` page with its Link header.
pub(super) fn paged_wrapped<T>(
    ctx: &Ctx,
    key: &str,
    items: &[T],
    path: &str,
    render: impl Fn(&T) -> Value,
) -> Reply {
    let (page, per_page) = page_params(ctx);
    let total = items.len();
    let (items, last, has_next) = slice_page(items, page, per_page, render);
    let mut body = serde_json::Map::new();
    body.insert("total_count".to_owned(), json!(total));
    body.insert(key.to_owned(), Value::Array(items));
    let reply = Reply::ok(&Value::Object(body));
    match link_header(ctx, path, page, last, has_next) {
        Some(l) => reply.header("link", &l),
        None => reply,
    }
}
