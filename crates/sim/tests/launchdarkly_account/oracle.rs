//! Every LaunchDarkly answer headroom asks for, held to LaunchDarkly's published OpenAPI
//! description (`../shared/oracles/launchdarkly/ld-openapi.json`): one test per endpoint, its
//! 200s (each list non-empty, so the check is not vacuous) and its refusals (401, 404, 400,
//! 429) against the schemas the operation declares for those statuses. Where the description
//! declares no 429 (segments), the sim's 429 is held to `RateLimitedErrorRep` all the same.

use serde_json::{Value, json};

use super::openapi::Description;
use super::{ALICE, body, get, get_as, ld_sim, small};
use headroom_core::clock::SignedDuration;
use headroom_sim::{LdAccountSpec, LdLimits};

const ORACLE: &str = "launchdarkly/ld-openapi.json";

/// The description, or `None` after reporting `test` skipped (a failure under CI).
fn description(test: &str) -> Option<Description> {
    let path = headroom_testkit::oracles::file(test, ORACLE)?;
    Some(Description::load_jira(&path))
}

/// Every route's window holds one request, so the second is refused.
fn one_a_window() -> LdAccountSpec {
    small().with_limits(
        LdLimits::default()
            .with_window(SignedDuration::from_secs(10))
            .with_route_default(1),
    )
}

/// Checks each answer against operation `op` (a path of the description); the failures.
async fn validate(
    d: &Description,
    op: &str,
    ok: &[&str],
    refusals: &[(&str, &str, u16)],
) -> Vec<String> {
    let mut failures = Vec::new();
    let sim = ld_sim(small());
    for uri in ok {
        let r = get(&sim, uri).await;
        let status = r.status().as_u16();
        if status != 200 {
            failures.push(format!("{uri}: answered {status}"));
            continue;
        }
        if let Err(e) = d.check("get", op, status, r.body()) {
            failures.push(format!("{uri} ({status}): {e}"));
        }
        let v = body(&r);
        if v.get("items")
            .is_some_and(|i| i.as_array().is_none_or(Vec::is_empty))
        {
            failures.push(format!("{uri}: empty items"));
        }
    }
    for (uri, token, expected) in refusals {
        let r = get_as(&sim, uri, token).await;
        let status = r.status().as_u16();
        if status != *expected {
            failures.push(format!("{uri}: answered {status}, not {expected}"));
        } else if let Err(e) = d.check("get", op, status, r.body()) {
            failures.push(format!("{uri} ({status}): {e}"));
        }
    }
    let limited = ld_sim(one_a_window());
    let uri = ok.first().copied().unwrap_or("/api/v2/members");
    get(&limited, uri).await;
    let r = get(&limited, uri).await;
    let status = r.status().as_u16();
    let result = if d.statuses("get", op).contains(&429) {
        d.check("get", op, 429, r.body())
    } else {
        rate_limited_rep(d, r.body())
    };
    match (status, result) {
        (429, Ok(())) => {}
        (429, Err(e)) => failures.push(format!("{uri} (429): {e}")),
        (other, _) => failures.push(format!("{uri}: the second request answered {other}")),
    }
    failures
}

fn rate_limited_rep(d: &Description, body: &[u8]) -> Result<(), String> {
    let v: Value = serde_json::from_slice(body).map_err(|e| e.to_string())?;
    let schema = d.validator(&json!({"$ref": "#/components/schemas/RateLimitedErrorRep"}));
    let errors: Vec<String> = schema.iter_errors(&v).map(|e| e.to_string()).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

fn verdict(failures: Vec<String>) {
    assert!(
        failures.is_empty(),
        "against the description:\n  {}",
        failures.join("\n  ")
    );
}

const NOBODY: &str = "api-nobody";

#[tokio::test(start_paused = true)]
async fn caller_identity_answers_validate_against_the_published_description() {
    let Some(d) = description("caller_identity_answers_validate_against_the_published_description")
    else {
        return;
    };
    let mut f = validate(
        &d,
        "/api/v2/caller-identity",
        &["/api/v2/caller-identity"],
        &[("/api/v2/caller-identity", NOBODY, 401)],
    )
    .await;
    let sim = ld_sim(small());
    for token in [super::BOB, super::SERVICE] {
        let r = get_as(&sim, "/api/v2/caller-identity", token).await;
        if let Err(e) = d.check(
            "get",
            "/api/v2/caller-identity",
            r.status().as_u16(),
            r.body(),
        ) {
            f.push(format!("{token}: {e}"));
        }
    }
    verdict(f);
}

#[tokio::test(start_paused = true)]
async fn project_answers_validate_against_the_published_description() {
    let Some(d) = description("project_answers_validate_against_the_published_description") else {
        return;
    };
    verdict(
        validate(
            &d,
            "/api/v2/projects",
            &[
                "/api/v2/projects?limit=2",
                "/api/v2/projects?limit=2&offset=2&expand=environments",
            ],
            &[
                ("/api/v2/projects", NOBODY, 401),
                ("/api/v2/projects?limit=0", ALICE, 400),
            ],
        )
        .await,
    );
}

#[tokio::test(start_paused = true)]
async fn environment_answers_validate_against_the_published_description() {
    let Some(d) = description("environment_answers_validate_against_the_published_description")
    else {
        return;
    };
    let op = "/api/v2/projects/{projectKey}/environments";
    verdict(
        validate(
            &d,
            op,
            &[
                "/api/v2/projects/default/environments",
                "/api/v2/projects/proj-1/environments?limit=1&offset=1",
            ],
            &[
                ("/api/v2/projects/default/environments", NOBODY, 401),
                ("/api/v2/projects/nope/environments", ALICE, 404),
                (
                    "/api/v2/projects/default/environments?offset=-1",
                    ALICE,
                    400,
                ),
            ],
        )
        .await,
    );
}

#[tokio::test(start_paused = true)]
async fn flag_answers_validate_against_the_published_description() {
    let Some(d) = description("flag_answers_validate_against_the_published_description") else {
        return;
    };
    let mut f = validate(
        &d,
        "/api/v2/flags/{projectKey}",
        &[
            "/api/v2/flags/default",
            "/api/v2/flags/default?limit=5&offset=20",
            "/api/v2/flags/proj-1?summary=0&env=production&env=test",
            "/api/v2/flags/proj-2?summary=true&env=test",
        ],
        &[
            ("/api/v2/flags/default", NOBODY, 401),
            ("/api/v2/flags/nope", ALICE, 404),
            ("/api/v2/flags/default?limit=x", ALICE, 400),
        ],
    )
    .await;
    // The unpaged list (no `LD-API-Version`) has the same shape.
    let sim = ld_sim(small());
    let r = super::send(&sim, "/api/v2/flags/default", &[("authorization", ALICE)]).await;
    if let Err(e) = d.check(
        "get",
        "/api/v2/flags/{projectKey}",
        r.status().as_u16(),
        r.body(),
    ) {
        f.push(format!("unpinned: {e}"));
    }
    verdict(f);
}

#[tokio::test(start_paused = true)]
async fn segment_answers_validate_against_the_published_description() {
    let Some(d) = description("segment_answers_validate_against_the_published_description") else {
        return;
    };
    verdict(
        validate(
            &d,
            "/api/v2/segments/{projectKey}/{environmentKey}",
            &[
                "/api/v2/segments/default/production",
                "/api/v2/segments/proj-2/test?limit=2&offset=2",
            ],
            &[
                ("/api/v2/segments/default/production", NOBODY, 401),
                ("/api/v2/segments/default/nope", ALICE, 404),
                ("/api/v2/segments/nope/production", ALICE, 404),
            ],
        )
        .await,
    );
}

#[tokio::test(start_paused = true)]
async fn member_answers_validate_against_the_published_description() {
    let Some(d) = description("member_answers_validate_against_the_published_description") else {
        return;
    };
    verdict(
        validate(
            &d,
            "/api/v2/members",
            &["/api/v2/members", "/api/v2/members?limit=3&offset=3"],
            &[("/api/v2/members", NOBODY, 401)],
        )
        .await,
    );
}

#[tokio::test(start_paused = true)]
async fn code_reference_answers_validate_against_the_published_description() {
    let Some(d) = description("code_reference_answers_validate_against_the_published_description")
    else {
        return;
    };
    verdict(
        validate(
            &d,
            "/api/v2/code-refs/repositories",
            &["/api/v2/code-refs/repositories"],
            &[("/api/v2/code-refs/repositories", NOBODY, 401)],
        )
        .await,
    );
}

#[tokio::test(start_paused = true)]
async fn audit_log_answers_validate_against_the_published_description() {
    let Some(d) = description("audit_log_answers_validate_against_the_published_description")
    else {
        return;
    };
    verdict(
        validate(
            &d,
            "/api/v2/auditlog",
            &[
                "/api/v2/auditlog",
                "/api/v2/auditlog?limit=20",
                "/api/v2/auditlog?limit=3&before=4102444800000&after=0",
            ],
            &[
                ("/api/v2/auditlog", NOBODY, 401),
                ("/api/v2/auditlog?limit=0", ALICE, 400),
            ],
        )
        .await,
    );
}
