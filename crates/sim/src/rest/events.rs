//! The events feed (`/events`): pages of the public timeline, with its polling headers.

use super::*;

impl Simulator {
    pub(super) fn events(&self, ctx: &Ctx) -> Reply {
        let inner = &self.inner;
        let n = {
            let mut s = lock(&inner.scenario_state);
            s.events_requests += 1;
            s.events_requests
        };
        match inner.config.scenario {
            Scenario::TransientFailure if n == 1 => {
                return Reply::json(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    &json!({"message": "Server Error"}),
                );
            }
            Scenario::TransientFailureExhausted => {
                return match n % 3 {
                    1 => Reply::json(
                        StatusCode::INTERNAL_SERVER_ERROR,
                        &json!({"message": "Server Error"}),
                    ),
                    2 => Reply {
                        status: StatusCode::BAD_GATEWAY,
                        headers: http::HeaderMap::new(),
                        body: bytes::Bytes::from_static(
                            b"<html><body><h1>502 Bad Gateway</h1></body></html>",
                        ),
                        etag: false,
                    },
                    _ => Reply::json(
                        StatusCode::SERVICE_UNAVAILABLE,
                        &json!({"message": "Service Unavailable"}),
                    ),
                };
            }
            _ => {}
        }
        let (page, per_page) = page_params(ctx);
        let cap = inner.config.feed_cap;
        let scripted = |p: FeedPage| -> Reply {
            let reply = Reply::ok(&Value::Array(p.events));
            match link_header(
                ctx,
                "/events",
                page,
                p.last_page.unwrap_or(page),
                p.has_next,
            ) {
                Some(l) => reply.header("link", &l),
                None => reply,
            }
        };
        let list: Option<Vec<Value>> = if let Some(events) = &inner.config.feed_events {
            Some(crate::replay::window(
                events,
                inner.config.feed_replay,
                inner.started,
                ctx.now,
                cap,
                &ctx.base,
            ))
        } else {
            match inner.config.scenario {
                Scenario::LiveFeed => {
                    let w = lock(&inner.world);
                    Some(feed::live_window(
                        &ctx.base,
                        &w,
                        inner.config.seed,
                        inner.started,
                        ctx.now,
                        cap,
                    ))
                }
                _ => None,
            }
        };
        let reply = match list {
            Some(items) => {
                if page > 1 && ((page - 1) as usize).saturating_mul(per_page) >= cap {
                    return Reply::message(
                        StatusCode::UNPROCESSABLE_ENTITY,
                        "In order to keep the API fast for everyone, pagination is limited for this resource.",
                        "https://docs.github.com/v3/#pagination",
                    );
                }
                paged(ctx, &items, "/events", Value::clone)
            }
            None => match inner.config.scenario {
                Scenario::Paginated => scripted(feed::paginated_page(&ctx.base, page)),
                Scenario::PaginatedFinalPage => scripted(feed::final_page_walk(&ctx.base, page)),
                _ => {
                    let events = if page == 1 {
                        feed::default_page(&ctx.base)
                    } else {
                        Vec::new()
                    };
                    Reply::ok(&Value::Array(events))
                }
            },
        };
        reply
            .header(
                "x-poll-interval",
                &inner.config.poll_interval_secs.to_string(),
            )
            .header("cache-control", "private, max-age=60, s-maxage=60")
    }
}
