//! Every Jira answer the simulator serves, held to Atlassian's published descriptions
//! (`../shared/oracles/jira/`): each endpoint headroom calls, its 200 against the operation's
//! response schema, its refusals against `ErrorCollection`. The sprint listing declares no
//! schema, only an example: its page keys are held to the example's and each sprint to
//! `SprintBean`.

use http::Method;
use serde_json::{Value, json};

use super::openapi::Description;
use super::{basic, body, jira_sim, send};
use headroom_sim::{JiraLimits, JiraSiteSpec};

const TEST: &str = "every_jira_answer_validates_against_the_published_descriptions";

/// One request and the operation it exercises.
struct Case {
    software: bool,
    method: &'static str,
    operation: &'static str,
    uri: &'static str,
    body: Option<Value>,
    /// The list that must not be empty, so the check is not vacuous.
    list: Option<&'static str>,
}

fn case(method: &'static str, operation: &'static str, uri: &'static str) -> Case {
    Case {
        software: operation.starts_with("/rest/agile"),
        method,
        operation,
        uri,
        body: None,
        list: None,
    }
}

fn cases() -> Vec<Case> {
    let with = |mut c: Case, body: Option<Value>, list: &'static str| {
        c.body = body;
        c.list = Some(list);
        c
    };
    let all_fields = json!({"jql": "project in (PA, PB) ORDER BY updated", "fields": ["*all"], "maxResults": 10});
    vec![
        case("get", "/rest/api/3/myself", "/rest/api/3/myself"),
        with(
            case("get", "/rest/api/3/field", "/rest/api/3/field"),
            None,
            ".",
        ),
        with(
            case(
                "get",
                "/rest/api/3/project/search",
                "/rest/api/3/project/search?maxResults=2",
            ),
            None,
            "values",
        ),
        with(
            case("post", "/rest/api/3/search/jql", "/rest/api/3/search/jql"),
            Some(all_fields),
            "issues",
        ),
        with(
            case("post", "/rest/api/3/search/jql", "/rest/api/3/search/jql"),
            Some(json!({"jql": "project = PA", "maxResults": 3})),
            "issues",
        ),
        with(
            case("post", "/rest/api/3/search/jql", "/rest/api/3/search/jql"),
            Some(json!({
                "jql": "project in (PA, PB) AND (status != Done OR NOT labels is EMPTY) ORDER BY key",
                "fields": ["status", "labels", "customfield_10020", "customfield_10016"],
            })),
            "issues",
        ),
        with(
            case(
                "get",
                "/rest/api/3/search/jql",
                "/rest/api/3/search/jql?jql=project%20%3D%20PB&fields=summary,status,assignee,customfield_10020&fields=key",
            ),
            None,
            "issues",
        ),
        Case {
            body: Some(json!({"jql": "project in (PA, PB) AND status != Done"})),
            ..case(
                "post",
                "/rest/api/3/search/approximate-count",
                "/rest/api/3/search/approximate-count",
            )
        },
        with(
            case(
                "get",
                "/rest/api/3/issue/{issueIdOrKey}/changelog",
                "/rest/api/3/issue/PA-1/changelog?maxResults=2",
            ),
            None,
            "values",
        ),
        with(
            case(
                "post",
                "/rest/api/3/changelog/bulkfetch",
                "/rest/api/3/changelog/bulkfetch",
            ),
            Some(json!({"issueIdsOrKeys": ["PA-1", "PA-2", "10003"], "maxResults": 4})),
            "issueChangeLogs",
        ),
        with(
            case(
                "get",
                "/rest/api/3/issue/{issueIdOrKey}/comment",
                "/rest/api/3/issue/PA-2/comment",
            ),
            None,
            "comments",
        ),
        with(
            case(
                "get",
                "/rest/api/3/issue/{issueIdOrKey}/worklog",
                "/rest/api/3/issue/PB-3/worklog",
            ),
            None,
            "worklogs",
        ),
        with(
            case(
                "get",
                "/rest/agile/1.0/board",
                "/rest/agile/1.0/board?maxResults=100",
            ),
            None,
            "values",
        ),
        // Refusals: the description declares these statuses.
        case(
            "get",
            "/rest/api/3/issue/{issueIdOrKey}/changelog",
            "/rest/api/3/issue/PA-999/changelog",
        ),
        case(
            "get",
            "/rest/api/3/issue/{issueIdOrKey}/comment",
            "/rest/api/3/issue/PA-1/comment?orderBy=author",
        ),
        with(
            case("post", "/rest/api/3/search/jql", "/rest/api/3/search/jql"),
            Some(json!({"jql": "order by key"})),
            "",
        ),
        with(
            case("post", "/rest/api/3/search/jql", "/rest/api/3/search/jql"),
            Some(json!({"jql": "project = PA AND resolution = Fixed"})),
            "",
        ),
        with(
            case(
                "post",
                "/rest/api/3/changelog/bulkfetch",
                "/rest/api/3/changelog/bulkfetch",
            ),
            Some(json!({"issueIdsOrKeys": []})),
            "",
        ),
    ]
}

fn error_collection(d: &Description, v: &Value) -> Result<(), String> {
    let validator = d.validator(&json!({"$ref": "#/components/schemas/ErrorCollection"}));
    let errors: Vec<String> = validator.iter_errors(v).map(|e| e.to_string()).collect();
    if errors.is_empty() {
        Ok(())
    } else {
        Err(errors.join("; "))
    }
}

#[tokio::test(start_paused = true)]
async fn every_jira_answer_validates_against_the_published_descriptions() {
    let Some(platform) = headroom_testkit::oracles::file(TEST, "jira/jira-platform-v3.json") else {
        return;
    };
    let Some(software) = headroom_testkit::oracles::file(TEST, "jira/jira-software.json") else {
        return;
    };
    let (p, s) = (
        Description::load_jira(&platform),
        Description::load_jira(&software),
    );
    let mut limits = JiraLimits::default();
    limits.burst_per_sec = 0;
    let spec = JiraSiteSpec::new("acme")
        .with_size(2, 6)
        .with_time_zone("America/Sao_Paulo")
        .with_limits(limits);
    let sim = jira_sim(spec);
    let mut failures = Vec::new();
    for c in cases() {
        let d = if c.software { &s } else { &p };
        let method = if c.method == "post" {
            Method::POST
        } else {
            Method::GET
        };
        let r = send(&sim, method, c.uri, &basic("alice", "t1"), c.body.clone()).await;
        let status = r.status().as_u16();
        let v = body(&r);
        let label = format!("{} {} ({status})", c.method, c.uri);
        if let Err(e) = d.check(c.method, c.operation, status, r.body()) {
            failures.push(format!("{label}: {e}"));
        }
        if status >= 400 {
            if let Err(e) = error_collection(&p, &v) {
                failures.push(format!("{label}: ErrorCollection: {e}"));
            }
        } else if let Some(list) = c.list.filter(|l| !l.is_empty()) {
            // `.`: the answer is itself the list.
            let listed = if list == "." { &v } else { &v[list] };
            assert!(
                listed.as_array().is_some_and(|a| !a.is_empty()),
                "{label}: empty {list}"
            );
        }
    }
    failures.extend(sprint_page(&s, &sim).await);
    failures.extend(refusals(&p, &sim).await);
    assert!(
        failures.is_empty(),
        "against the descriptions:\n  {}",
        failures.join("\n  ")
    );
}

/// The sprint listing: the page's keys among the example's, each sprint a `SprintBean`.
async fn sprint_page(s: &Description, sim: &headroom_sim::Simulator) -> Vec<String> {
    let op = &s.doc()["paths"]["/rest/agile/1.0/board/{boardId}/sprint"]["get"];
    let example: Value = op["responses"]["200"]["content"]["application/json"]["example"]
        .as_str()
        .and_then(|t| serde_json::from_str(t).ok())
        .expect("the sprint listing's example");
    let r = super::get(sim, "/rest/agile/1.0/board/1/sprint").await;
    let v = body(&r);
    let mut failures = Vec::new();
    for key in v.as_object().expect("a page").keys() {
        if example.get(key).is_none() {
            failures.push(format!("sprint page: {key} is not in the example"));
        }
    }
    let sprint = s.validator(&json!({"$ref": "#/components/schemas/SprintBean"}));
    let values = v["values"].as_array().expect("values");
    assert!(!values.is_empty(), "no sprints to check");
    for (i, x) in values.iter().enumerate() {
        failures.extend(sprint.iter_errors(x).map(|e| format!("sprint {i}: {e}")));
    }
    failures
}

/// 401, 410, the kanban 400 and a burst 429: Jira's error body.
async fn refusals(p: &Description, sim: &headroom_sim::Simulator) -> Vec<String> {
    let mut failures = Vec::new();
    let answers = [
        send(
            sim,
            Method::GET,
            "/rest/api/3/myself",
            &basic("bob", "t1"),
            None,
        )
        .await,
        super::get(sim, "/rest/api/3/search?jql=project%3DPA").await,
        super::get(sim, "/rest/agile/1.0/board/2/sprint").await,
    ];
    let mut limits = JiraLimits::default();
    limits.burst_per_sec = 1;
    limits.burst_buffer = 0;
    let tight = jira_sim(JiraSiteSpec::new("acme").with_limits(limits));
    super::get(&tight, "/rest/api/3/myself").await;
    let answers = answers
        .into_iter()
        .chain([super::get(&tight, "/rest/api/3/myself").await]);
    let mut statuses = Vec::new();
    for r in answers {
        statuses.push(r.status().as_u16());
        if let Err(e) = error_collection(p, &body(&r)) {
            failures.push(format!("{}: {e}", r.status()));
        }
    }
    assert_eq!(statuses, [401, 410, 400, 429]);
    failures
}
