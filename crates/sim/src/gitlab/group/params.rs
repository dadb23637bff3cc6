//! The listing parameters GitLab's group and project endpoints share: time filters
//! (`updated_after`, …), `order_by` and `sort`, and their 400s.

use headroom_core::clock::Timestamp;
use http::StatusCode;
use serde_json::json;

use super::super::GlCtx;
use crate::sim::Reply;

/// A query parameter's raw value.
pub(crate) fn q<'a>(ctx: &'a GlCtx, name: &str) -> Option<&'a str> {
    ctx.query
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

/// GitLab's answer to a parameter outside its allowed values.
pub(crate) fn invalid_value(name: &str) -> Reply {
    Reply::json(
        StatusCode::BAD_REQUEST,
        &json!({"error": format!("{name} does not have a valid value")}),
    )
}

/// A time parameter: ISO 8601 (`2026-11-30T10:00:00Z`, an offset, or a bare date at UTC
/// midnight).
pub(crate) fn time(ctx: &GlCtx, name: &str) -> Result<Option<Timestamp>, Reply> {
    let Some(raw) = q(ctx, name).filter(|v| !v.is_empty()) else {
        return Ok(None);
    };
    if let Ok(t) = raw.parse::<Timestamp>() {
        return Ok(Some(t));
    }
    let is_date = raw.len() == 10 && raw.parse::<jiff::civil::Date>().is_ok();
    is_date
        .then(|| format!("{raw}T00:00:00Z").parse::<Timestamp>().ok())
        .flatten()
        .map(Some)
        .ok_or_else(|| {
            Reply::json(
                StatusCode::BAD_REQUEST,
                &json!({"error": format!("{name} is invalid")}),
            )
        })
}

/// The window a listing's `{field}_after` / `{field}_before` pair asks for. `strict_after`:
/// GitLab's finder compares with `>` (pipelines) rather than `>=` (issuables, deployments).
#[derive(Debug, Clone, Copy)]
pub(crate) struct Window {
    after: Option<Timestamp>,
    before: Option<Timestamp>,
    strict_after: bool,
}

impl Window {
    /// Reads `{field}_after` and `{field}_before`.
    pub(crate) fn of(ctx: &GlCtx, field: &str, strict_after: bool) -> Result<Window, Reply> {
        Ok(Window {
            after: time(ctx, &format!("{field}_after"))?,
            before: time(ctx, &format!("{field}_before"))?,
            strict_after,
        })
    }

    /// Whether `t` falls inside.
    pub(crate) fn admits(&self, t: Timestamp) -> bool {
        let after_ok = match self.after {
            Some(a) if self.strict_after => t > a,
            Some(a) => t >= a,
            None => true,
        };
        after_ok && self.before.is_none_or(|b| t <= b)
    }
}

/// `order_by` (one of `allowed`, else 400) and whether `sort` is descending.
pub(crate) fn order<'a>(
    ctx: &'a GlCtx,
    allowed: &[&'static str],
    default_order: &'static str,
    default_desc: bool,
) -> Result<(&'a str, bool), Reply> {
    let by = q(ctx, "order_by").unwrap_or(default_order);
    if !allowed.contains(&by) {
        return Err(invalid_value("order_by"));
    }
    let desc = match q(ctx, "sort") {
        None => default_desc,
        Some("asc") => false,
        Some("desc") => true,
        Some(_) => return Err(invalid_value("sort")),
    };
    Ok((by, desc))
}

/// A sort key: a time or a text, with the id to break ties.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Key {
    Time(Timestamp, u64),
    Text(String, u64),
    Id(u64),
}

/// Sorts `items` by `key`, descending when `desc`.
pub(crate) fn sort_by<T>(items: &mut [&T], desc: bool, key: impl Fn(&T) -> Key) {
    items.sort_by(|a, b| {
        let o = key(a).cmp(&key(b));
        if desc { o.reverse() } else { o }
    });
}
