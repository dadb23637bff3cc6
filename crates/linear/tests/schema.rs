//! Linear's published schema is the oracle: every document headroom-linear can send must
//! validate against it as an executable document. Linear refuses an invalid document whole
//! (HTTP 400, `GRAPHQL_VALIDATION_FAILED`), so a field our simulator answers but Linear does
//! not have would fail a sync against Linear however green the tests against the simulator.
//!
//! The schema is read from `../shared/oracles/linear/schema.graphql` (it cannot be committed
//! here); without it the test reports a skip, which fails under CI.

#![allow(clippy::expect_used)]

use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use headroom_linear::documents;

fn linear_schema(test: &str) -> Option<Valid<Schema>> {
    let text = headroom_testkit::oracles::read(test, "linear/schema.graphql")?;
    Some(
        match Schema::parse_and_validate(text, "linear/schema.graphql") {
            Ok(valid) => valid,
            Err(e) => panic!(
                "Linear's published schema no longer validates: {}",
                e.errors
            ),
        },
    )
}

#[test]
fn every_document_headroom_sends_is_valid_against_linears_schema() {
    let Some(schema) =
        linear_schema("every_document_headroom_sends_is_valid_against_linears_schema")
    else {
        return;
    };
    let mut failures = Vec::new();
    for d in documents::ALL {
        if let Err(e) =
            ExecutableDocument::parse_and_validate(&schema, d.text, format!("{}.graphql", d.name))
        {
            failures.push(format!("{}:\n{}", d.name, e.errors));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn a_field_linear_does_not_have_is_caught() {
    let Some(schema) = linear_schema("a_field_linear_does_not_have_is_caught") else {
        return;
    };
    let wrong = "query Wrong { issues(first: 1) { nodes { id storyPoints } } }";
    assert!(ExecutableDocument::parse_and_validate(&schema, wrong, "wrong.graphql").is_err());
}
