//! GraphQL through the exit door, with a page size that shrinks when GitHub times out.

use std::sync::atomic::{AtomicU32, Ordering};

use headroom_core::Dimension;
use headroom_http::{ApiError, ApiRequest};
use headroom_sync::{StageCtx, StageError};
use serde_json::Value;

/// A GraphQL page size that halves on 502/504 or a timeout (GitHub gives up on queries that
/// take too long) and doubles back after a few successes, between `min` and `max`.
#[derive(Debug)]
pub struct PageSize {
    current: AtomicU32,
    streak: AtomicU32,
    min: u32,
    max: u32,
}

/// Successes in a row before the size grows back.
const GROW_AFTER: u32 = 3;

impl PageSize {
    /// Starts at `max`.
    pub fn new(min: u32, max: u32) -> Self {
        Self {
            current: AtomicU32::new(max),
            streak: AtomicU32::new(0),
            min: min.max(1),
            max: max.max(min.max(1)),
        }
    }

    /// The size to ask for now.
    pub fn get(&self) -> u32 {
        self.current.load(Ordering::Relaxed)
    }

    /// Halves the size; `false` when it is already at the minimum.
    pub fn shrink(&self) -> bool {
        self.streak.store(0, Ordering::Relaxed);
        let now = self.get();
        if now <= self.min {
            return false;
        }
        self.current
            .store((now / 2).max(self.min), Ordering::Relaxed);
        true
    }

    /// Counts a success; doubles the size after a few in a row.
    pub fn success(&self) {
        let streak = self.streak.fetch_add(1, Ordering::Relaxed) + 1;
        if streak >= GROW_AFTER {
            self.streak.store(0, Ordering::Relaxed);
            let now = self.get();
            self.current
                .store(now.saturating_mul(2).min(self.max), Ordering::Relaxed);
        }
    }
}

/// Sends a query built for the current page size; on 502/504 or a timeout, shrinks the page
/// and asks again (each attempt goes through the governor). Returns `data`, or a permanent
/// error carrying GraphQL's errors.
pub async fn query(
    ctx: &StageCtx<'_>,
    size: &PageSize,
    route: &'static str,
    query: &str,
    variables: impl Fn(u32) -> Value,
) -> Result<Value, StageError> {
    loop {
        let mut request = ApiRequest::graphql(query, &variables(size.get()))
            .map_err(|e| StageError::Permanent(e.to_string()))?
            .route(route, Dimension::GraphqlCost);
        // GitHub ignores the query string; logs and proxies see which stage asked.
        request.target = format!("/graphql?stage={}", ctx.decl().name);
        match ctx.send(request).await {
            Ok(response) => {
                size.success();
                let body: Value = response
                    .json()
                    .map_err(|e| StageError::Transient(e.to_string()))?;
                let errors = body.get("errors").and_then(Value::as_array);
                let data = body.get("data").cloned().unwrap_or(Value::Null);
                match errors {
                    Some(errors) if !errors.is_empty() => {
                        // NOT_FOUND with data present means "that entity is gone": the
                        // caller sees a null where it expected an object.
                        let all_not_found = errors
                            .iter()
                            .all(|e| e.get("type").and_then(Value::as_str) == Some("NOT_FOUND"));
                        if all_not_found && !data.is_null() {
                            return Ok(data);
                        }
                        let text: Vec<String> = errors
                            .iter()
                            .map(|e| {
                                e.get("message")
                                    .and_then(Value::as_str)
                                    .unwrap_or("GraphQL error")
                                    .to_owned()
                            })
                            .collect();
                        return Err(StageError::Permanent(headroom_core::redact(
                            &text.join("; "),
                        )));
                    }
                    _ => return Ok(data),
                }
            }
            Err(ApiError::Server {
                status: 502 | 504, ..
            })
            | Err(ApiError::Timeout { .. })
                if size.shrink() =>
            {
                tracing::info!(
                    stage = ctx.decl().name,
                    page_size = size.get(),
                    "GraphQL timed out; asking for smaller pages"
                );
                continue;
            }
            Err(e) => return Err(e.into()),
        }
    }
}

/// `pageInfo` of a connection: the cursor after it, when there is a next page.
pub fn next_cursor(connection: &Value) -> Option<String> {
    let info = connection.get("pageInfo")?;
    if info.get("hasNextPage").and_then(Value::as_bool) == Some(true) {
        info.get("endCursor")
            .and_then(Value::as_str)
            .map(str::to_owned)
    } else {
        None
    }
}

/// The number at `path` in a response (a `totalCount`), 0 when absent.
pub fn count_at(v: &Value, path: &[&str]) -> u64 {
    path.iter()
        .try_fold(v, |v, k| v.get(*k))
        .and_then(Value::as_u64)
        .unwrap_or(0)
}

/// The `nodes` of a connection.
pub fn nodes(connection: &Value) -> &[Value] {
    connection
        .get("nodes")
        .and_then(Value::as_array)
        .map_or(&[], Vec::as_slice)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_size_shrinks_to_the_minimum_and_grows_back() {
        let p = PageSize::new(5, 50);
        assert_eq!(p.get(), 50);
        assert!(p.shrink());
        assert_eq!(p.get(), 25);
        assert!(p.shrink());
        assert!(p.shrink());
        assert_eq!(p.get(), 6);
        assert!(p.shrink());
        assert_eq!(p.get(), 5);
        assert!(!p.shrink());
        for _ in 0..GROW_AFTER {
            p.success();
        }
        assert_eq!(p.get(), 10);
        for _ in 0..(GROW_AFTER * 5) {
            p.success();
        }
        assert_eq!(p.get(), 50);
    }
}
