//! `POST /graphql`: authentication, validation and cost before anything runs, the GraphQL
//! secondary and primary limits, the timeout fault, and running the query on the engine; and
//! `GET /rate_limit`'s body.

use super::*;
use crate::graphql::QueryCost;

impl Simulator {
    pub(super) async fn graphql(&self, ctx: &Ctx, in_flight: u32) -> (Reply, Option<Reading>, u64) {
        let inner = &self.inner;
        let now = ctx.now;
        let subject = &ctx.subject;
        if !subject.is_authenticated() {
            return (
                Reply::message(
                    StatusCode::UNAUTHORIZED,
                    "This endpoint requires you to be authenticated.",
                    "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql",
                ),
                None,
                0,
            );
        }
        if ctx.method != Method::POST {
            return (Reply::not_found(), None, 0);
        }
        let peek = |q: &mut Quotas| q.peek(&inner.config, now, subject, Resource::Graphql);
        let (query, variables, operation, cost) = match parse_document(ctx) {
            Ok(parsed) => parsed,
            Err(reply) => return (reply, Some(peek(&mut lock(&inner.quotas))), 0),
        };
        let timed_out = self.record_query(ctx, cost.node_count);
        if timed_out {
            // Too big to answer in time: GitHub's gateway gives up with a bare 502.
            let reading = peek(&mut lock(&inner.quotas));
            let reply = Reply {
                status: StatusCode::BAD_GATEWAY,
                headers: HeaderMap::new(),
                body: Bytes::from_static(b"<html><body><h1>502 Bad Gateway</h1></body></html>"),
                etag: false,
            };
            return (reply, Some(reading), 0);
        }
        let points = if cost.is_mutation { 5 } else { 1 };
        let secondary = lock(&inner.quotas).secondary(
            &inner.config,
            now,
            subject,
            in_flight,
            true,
            points,
            false,
        );
        if let Err(hit) = secondary {
            let reading = peek(&mut lock(&inner.quotas));
            return (
                secondary_reply(hit, &ctx.request_id, self.retry_after_date(now)),
                Some(reading),
                0,
            );
        }
        let spend = if inner.config.rate_limiting {
            lock(&inner.quotas).try_spend(&inner.config, now, subject, Resource::Graphql, cost.cost)
        } else {
            Ok(peek(&mut lock(&inner.quotas)))
        };
        let reading = match spend {
            Ok(r) => r,
            Err(r) => {
                let body = json!({
                    "errors": [{
                        "type": "RATE_LIMITED",
                        "code": "graphql_rate_limit",
                        "message": subject.exceeded_message(true),
                    }]
                });
                return (Reply::json(StatusCode::OK, &body), Some(r), 0);
            }
        };
        let reply = self
            .run_query(
                ctx,
                &reading,
                &cost,
                &query,
                variables,
                operation.as_deref(),
            )
            .await;
        let spent = if inner.config.rate_limiting {
            cost.cost
        } else {
            0
        };
        (reply, Some(reading), spent)
    }

    /// Logs the query, and whether it is one the `graphql_timeout` fault answers with a 502
    /// (those above its node count, up to its number of times).
    fn record_query(&self, ctx: &Ctx, node_count: u64) -> bool {
        let inner = &self.inner;
        let mut state = lock(&inner.scenario_state);
        let timed_out = inner
            .config
            .faults
            .graphql_timeout_above_nodes
            .is_some_and(|above| node_count > above)
            && state.graphql_timeouts_answered < inner.config.faults.graphql_timeouts;
        if timed_out {
            state.graphql_timeouts_answered += 1;
        }
        if state.graphql_queries.len() >= inner.config.log_capacity.max(1) {
            state.graphql_queries.pop_front();
        }
        state.graphql_queries.push_back(GraphqlQuery {
            url_query: ctx.raw_query.clone(),
            node_count,
            timed_out,
        });
        timed_out
    }

    /// Runs a costed, admitted query on the engine and shapes its answer as GitHub does.
    async fn run_query(
        &self,
        ctx: &Ctx,
        reading: &Reading,
        cost: &QueryCost,
        query: &str,
        variables: Value,
        operation: Option<&str>,
    ) -> Reply {
        let inner = &self.inner;
        let subject = &ctx.subject;
        let gctx = GqlCtx {
            world: inner.world.clone(),
            viewer: match subject {
                Subject::User { login, .. } => Some(login.clone()),
                _ => None,
            },
            rate: inner.config.rate_limiting.then_some(RateInfo {
                limit: reading.limit,
                cost: cost.cost,
                remaining: reading.remaining,
                used: reading.used,
                reset_at: reading.reset,
                node_count: cost.node_count,
            }),
            base: ctx.base.clone(),
            scenario: inner.config.scenario,
        };
        // Heavy nested queries exceed GitHub's resource limits partway: it answers 200 with
        // what it gave up on null. The query ran, so it is charged.
        let limited = inner.config.scenario == Scenario::ResourceLimited
            && cost.node_count > inner.config.resource_limit_nodes;
        let mut request = async_graphql::Request::new(query)
            .variables(async_graphql::Variables::from_json(variables))
            .data(gctx);
        if let Some(op) = operation {
            request = request.operation_name(op);
        }
        let response = inner.schema.execute(request).await;
        let failed =
            || json!({"errors": [{"message": "Something went wrong while executing your query."}]});
        if limited {
            let value = serde_json::to_value(&response).unwrap_or_else(|_| failed());
            Reply::json(StatusCode::OK, &graphql::resource_limited(value))
        } else if response.errors.is_empty() {
            // Serialized straight from the engine, so fields keep the query's order.
            match serde_json::to_vec(&response) {
                Ok(body) => Reply::raw_json(StatusCode::OK, body),
                Err(_) => Reply::json(StatusCode::OK, &failed()),
            }
        } else {
            let value = serde_json::to_value(&response).unwrap_or_else(|_| failed());
            Reply::json(StatusCode::OK, &graphql::github_error_shape(value))
        }
    }

    pub(super) fn rate_limit_body(&self, ctx: &Ctx) -> Reply {
        let inner = &self.inner;
        let now = ctx.now;
        let mut resources = serde_json::Map::new();
        let mut core = Value::Null;
        for r in Resource::ALL {
            let reading = lock(&inner.quotas).report(&inner.config, now, &ctx.subject, r);
            let v = if inner.config.lying_rate_limit {
                json!({
                    "limit": reading.limit,
                    "used": 0,
                    "remaining": reading.limit,
                    "reset": (now + SignedDuration::from_secs(3600)).as_second(),
                })
            } else {
                json!({
                    "limit": reading.limit,
                    "used": reading.used,
                    "remaining": reading.remaining,
                    "reset": reading.reset.as_second(),
                })
            };
            if r == Resource::Core {
                core = v.clone();
            }
            resources.insert(r.name().to_owned(), v);
        }
        let reset_hour = (now + SignedDuration::from_secs(3600)).as_second();
        for (name, limit) in [
            ("integration_manifest", 5000),
            ("dependency_snapshots", 100),
            ("actions_runner_registration", 10_000),
        ] {
            resources.insert(
                name.to_owned(),
                json!({"limit": limit, "used": 0, "remaining": limit, "reset": reset_hour}),
            );
        }
        let version = ctx
            .headers
            .get("x-github-api-version")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("2022-11-28");
        let mut body = json!({"resources": resources});
        // From API version 2026-03-10 on, the top-level `rate` key is gone.
        if version < "2026-03-10"
            && let Some(obj) = body.as_object_mut()
        {
            obj.insert("rate".to_owned(), core);
        }
        let mut reply = Reply::json(StatusCode::OK, &body);
        reply.etag = false;
        reply
    }
}

/// The request's document, variables and operation, validated against GitHub's schema and
/// costed; or GitHub's answer to a request that cannot run (nothing is charged for it).
// The error is the response itself, built at most once per request.
#[allow(clippy::result_large_err)]
fn parse_document(ctx: &Ctx) -> Result<(String, Value, Option<String>, QueryCost), Reply> {
    let body: Value = match serde_json::from_slice(&ctx.body) {
        Ok(v) => v,
        Err(_) => {
            return Err(Reply::message(
                StatusCode::BAD_REQUEST,
                "Problems parsing JSON",
                "https://docs.github.com/graphql",
            ));
        }
    };
    let Some(query) = body.get("query").and_then(Value::as_str) else {
        return Err(Reply::json(
            StatusCode::OK,
            &json!({"errors": [{"message": "A query attribute must be specified and must be a string."}]}),
        ));
    };
    let variables = body.get("variables").cloned().unwrap_or(Value::Null);
    let operation = body.get("operationName").and_then(Value::as_str);
    // GitHub validates the document against its schema before anything else, and answers
    // an invalid one whole: HTTP 200, `errors`, no `data`, nothing charged (nothing ran).
    if let Err(errors) = graphql::validate(query) {
        return Err(Reply::json(StatusCode::OK, &json!({ "errors": errors })));
    }
    let cost = match graphql::query_cost(query, operation, &variables) {
        Ok(c) => c,
        Err(e) => {
            let mut err = json!({"message": e.message});
            if let (Some(kind), Some(obj)) = (e.kind, err.as_object_mut()) {
                obj.insert("type".to_owned(), json!(kind));
            }
            return Err(Reply::json(StatusCode::OK, &json!({"errors": [err]})));
        }
    };
    Ok((
        query.to_owned(),
        variables,
        operation.map(str::to_owned),
        cost,
    ))
}
