//! GitHub's published GraphQL schema is the oracle: every document headroom-github can send
//! (`org::graphql_documents`) must validate against it as an executable document. GitHub
//! refuses an invalid document whole (HTTP 200, `errors`, no `data`), so a field that does not
//! exist on a type would fail a stage against GitHub however well the simulator answered it.
//!
//! The schema is the vendored `schemas/github/schema.graphql` (see its README). It does not
//! pass strict SDL validation (`EnterpriseOwnerInfo` defines two fields twice), so it is taken
//! as given; executable documents are still validated against it in full.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::path::PathBuf;

use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use headroom_github::org;

fn github_schema() -> Valid<Schema> {
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../schemas/github/schema.graphql");
    let text = std::fs::read_to_string(&path).expect("the vendored schema");
    match Schema::parse_and_validate(text, &path) {
        Ok(valid) => valid,
        // GitHub's SDL repeats two fields of `EnterpriseOwnerInfo`; nothing else is wrong.
        Err(e) => {
            assert!(
                e.errors.len() <= 2,
                "the vendored schema changed: {}",
                e.errors
            );
            Valid::assume_valid(e.partial)
        }
    }
}

/// The validator's messages for `document`, one per line with its line and column.
fn problems(schema: &Valid<Schema>, name: &str, document: &str) -> Option<String> {
    match ExecutableDocument::parse_and_validate(schema, document, format!("{name}.graphql")) {
        Ok(_) => None,
        Err(e) => Some(
            e.errors
                .iter()
                .map(|d| {
                    let at = d
                        .line_column_range()
                        .map(|r| format!("{}:{}", r.start.line, r.start.column))
                        .unwrap_or_default();
                    format!("  {at} {}", d.error)
                })
                .collect::<Vec<_>>()
                .join("\n"),
        ),
    }
}

#[test]
fn every_document_headroom_sends_is_valid_against_githubs_schema() {
    let schema = github_schema();
    let documents = org::graphql_documents();
    let mut failures = Vec::new();
    for (name, document) in &documents {
        if let Some(p) = problems(&schema, name, document) {
            failures.push(format!("{name}:\n{p}"));
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} documents are invalid against GitHub's schema:\n{}",
        failures.len(),
        documents.len(),
        failures.join("\n")
    );
}

#[test]
fn the_enumeration_covers_every_stage_and_every_probe_size() {
    let documents = org::graphql_documents();
    let names: Vec<&str> = documents.iter().map(|(n, _)| n.as_str()).collect();
    // Every GraphQL stage sends at least one document of its own.
    for stage in [
        org::names::ORG,
        org::names::REPOSITORIES,
        org::names::PROJECTS,
        org::names::ISSUE_COMMENTS,
        org::names::PULL_REQUESTS,
        org::names::BRANCHES,
    ] {
        assert!(
            names.iter().any(|n| n.starts_with(&format!("{stage}."))),
            "no document of stage {stage}: {names:?}"
        );
    }
    for expected in [
        "org.organization",
        "org.membersWithRole",
        "org.teams",
        "repositories.repositories",
        "repositories.repository.issues",
        "projects.repository.projectsV2",
        "projects.repository.projectV2.items",
        "projects.organization.projectsV2",
        "projects.organization.projectV2",
        "issue_comments.repository.issues",
        "issue_comments.repository.issue.comments",
        "pull_requests.repository.pullRequests",
        "pull_requests.repository.pullRequest.commits",
        "branches.repository.refs",
        "plan",
    ] {
        assert!(names.contains(&expected), "{expected} missing: {names:?}");
    }
    // The probes of the three incremental connections, for 1 to 25 repositories: `since`
    // (filterBy) for issues, newest first (orderBy) for pull requests.
    for (prefix, marker) in [
        ("repositories.probe.issues", "filterBy"),
        ("issue_comments.probe.issues", "filterBy"),
        ("pull_requests.probe.pullRequests", "orderBy"),
    ] {
        for size in 1..=25 {
            let name = format!("{prefix}.{size}");
            let (_, doc) = documents
                .iter()
                .find(|(n, _)| *n == name)
                .unwrap_or_else(|| panic!("{name} missing"));
            assert_eq!(doc.matches(": repository(").count(), size, "{name}");
            assert!(doc.contains(marker), "{name}: {doc}");
        }
        assert!(
            !names.contains(&format!("{prefix}.26").as_str()),
            "batches stop at 25"
        );
    }
    assert!(documents.len() >= 15 + 75, "{}", documents.len());
    // Names are unique: a failure names one document.
    let mut sorted = names.clone();
    sorted.sort_unstable();
    sorted.dedup();
    assert_eq!(sorted.len(), names.len());
}

/// The oracle is not trivially satisfied: the mistakes GitHub refuses are refused here too.
#[test]
fn the_schema_refuses_what_github_refuses() {
    let schema = github_schema();
    let bad = [
        // An interface has only its own fields.
        "{ repository(owner: \"a\", name: \"b\") { owner { login databaseId } } }",
        "{ organization(login: \"a\") { nonsense } }",
        // A required argument missing.
        "{ repository(owner: \"a\") { name } }",
        // An enum value that does not exist.
        "{ repository(owner: \"a\", name: \"b\") { issues(first: 1, orderBy: { field: NEWEST, direction: ASC }) { totalCount } } }",
    ];
    for doc in bad {
        assert!(problems(&schema, "bad", doc).is_some(), "accepted: {doc}");
    }
    let good = "{ repository(owner: \"a\", name: \"b\") { owner { login ... on Organization { databaseId } ... on User { databaseId } } } }";
    assert_eq!(problems(&schema, "good", good), None);
}
