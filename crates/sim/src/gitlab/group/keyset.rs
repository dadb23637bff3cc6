//! GitLab's keyset pagination and the limits around it. `pagination=keyset` with `order_by`
//! and `sort` pages a list by the last item's sort key: the next page is only in
//! `Link: <…>; rel="next"` (carrying an opaque `cursor=`), the last page has no `Link`, and
//! no `X-Page`/`X-Total`/`X-Next-Page` header is sent. Of the seeded group's lists only
//! project issues offer it; asking it elsewhere is refused with 400. On a list that offers
//! it, offset paging past the maximum offset answers 405.
//!
//! The cursor's shape is the simulator's own (base64url of a small JSON object naming the
//! order, the last item's sort key and its id): clients must treat it as opaque.

use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use headroom_core::clock::Timestamp;
use http::StatusCode;
use serde_json::{Value, json};

use super::super::paging::enc;
use super::super::{API_PREFIX, GlCtx};
use super::params::{Key, q};
use crate::sim::Reply;

/// Items per page when the request names none.
const DEFAULT_PER_PAGE: usize = 20;
/// The largest page GitLab serves.
const MAX_PER_PAGE: usize = 100;

/// Whether the request asks keyset pagination.
pub(super) fn asked(ctx: &GlCtx) -> bool {
    q(ctx, "pagination") == Some("keyset")
}

/// The answer to keyset asked on a list that does not offer it (merge requests, pipelines,
/// notes, deployments…): GitLab refuses with 400. The message is the simulator's guess.
pub(super) fn unsupported() -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &json!({"error": "Keyset pagination is not yet available for this type of request"}),
    )
}

/// GitLab's 405 when offset paging reaches past `max_offset` (`page` × `per_page`, as
/// GitLab's check multiplies them) on a list of `type_name` objects that also offers keyset;
/// `None` when within it or when `max_offset` is 0 (no limit).
pub(super) fn beyond_max_offset(ctx: &GlCtx, max_offset: usize, type_name: &str) -> Option<Reply> {
    if max_offset == 0 || asked(ctx) {
        return None;
    }
    let page = number(ctx, "page").filter(|&p| p >= 1).unwrap_or(1);
    let reach = page.saturating_mul(per_page(ctx));
    (reach > max_offset).then(|| {
        Reply::json(
            StatusCode::METHOD_NOT_ALLOWED,
            &json!({"error": format!(
                "Offset pagination has a maximum allowed offset of {max_offset} for requests \
                 that return objects of type {type_name}. Remaining records can be retrieved \
                 using keyset pagination."
            )}),
        )
    })
}

/// One keyset page of `sorted` (already in the order `by`/`desc` asks, ties broken by id):
/// the items after the request's `cursor`, a `rel="next"` link when more follow.
pub(super) fn paged_by<T>(
    ctx: &GlCtx,
    path: &str,
    (by, desc): (&str, bool),
    sorted: &[T],
    key: impl Fn(&T) -> Key,
    render: impl Fn(&T) -> Value,
) -> Reply {
    let start = match q(ctx, "cursor") {
        None => 0,
        Some(raw) => match decode(raw, by) {
            // Everything up to the cursor's key, in the list's order, was served before: an
            // item updated since moved to the front and is not served again.
            Some(after) => sorted.partition_point(|item| {
                let k = key(item);
                if desc { k >= after } else { k <= after }
            }),
            None => {
                return Reply::json(
                    StatusCode::BAD_REQUEST,
                    &json!({"error": "cursor is invalid"}),
                );
            }
        },
    };
    let per_page = per_page(ctx);
    let page: Vec<&T> = sorted.iter().skip(start).take(per_page).collect();
    let more = start + page.len() < sorted.len();
    let body: Vec<Value> = page.iter().map(|item| render(item)).collect();
    let reply = Reply::json(StatusCode::OK, &Value::Array(body));
    match page.last() {
        Some(last) if more => {
            let url = next_url(ctx, path, &encode(by, &key(last)));
            reply.header("link", &format!("<{url}>; rel=\"next\""))
        }
        _ => reply,
    }
}

fn number(ctx: &GlCtx, name: &str) -> Option<usize> {
    q(ctx, name).and_then(|v| v.parse().ok())
}

fn per_page(ctx: &GlCtx) -> usize {
    number(ctx, "per_page")
        .filter(|&p| p >= 1)
        .unwrap_or(DEFAULT_PER_PAGE)
        .min(MAX_PER_PAGE)
}

/// The request's URL with `cursor` replaced, its other parameters kept in order.
fn next_url(ctx: &GlCtx, path: &str, cursor: &str) -> String {
    let mut pairs: Vec<String> = ctx
        .query
        .iter()
        .filter(|(k, _)| k != "cursor")
        .map(|(k, v)| format!("{}={}", enc(k), enc(v)))
        .collect();
    pairs.push(format!("cursor={}", enc(cursor)));
    format!("{}{API_PREFIX}{path}?{}", ctx.base, pairs.join("&"))
}

/// The cursor after an item whose key is `key`, in the order `by`.
fn encode(by: &str, key: &Key) -> String {
    let v = match key {
        Key::Time(t, id) => json!({"order_by": by, "t": t.to_string(), "id": id}),
        Key::Text(s, id) => json!({"order_by": by, "s": s, "id": id}),
        Key::Id(id) => json!({"order_by": by, "id": id}),
    };
    URL_SAFE_NO_PAD.encode(v.to_string())
}

/// The key a cursor carries, if it is one of ours for the order `by`.
fn decode(raw: &str, by: &str) -> Option<Key> {
    let bytes = URL_SAFE_NO_PAD.decode(raw).ok()?;
    let v: Value = serde_json::from_slice(&bytes).ok()?;
    if v["order_by"] != by {
        return None;
    }
    let id = v["id"].as_u64()?;
    if let Some(t) = v["t"].as_str() {
        return Some(Key::Time(t.parse::<Timestamp>().ok()?, id));
    }
    if let Some(s) = v["s"].as_str() {
        return Some(Key::Text(s.to_owned(), id));
    }
    Some(Key::Id(id))
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod cursor_tests {
    use super::*;

    #[test]
    fn a_cursor_carries_its_key_back_and_only_for_its_order() {
        let t: Timestamp = "2026-12-07T03:04:05.123456789Z".parse().expect("time");
        for key in [
            Key::Time(t, 9),
            Key::Text("a title".into(), 3),
            Key::Id(u64::MAX),
        ] {
            let raw = encode("updated_at", &key);
            assert_eq!(decode(&raw, "updated_at"), Some(key));
            assert_eq!(decode(&raw, "created_at"), None);
        }
        assert_eq!(decode("not a cursor!", "updated_at"), None);
    }
}
