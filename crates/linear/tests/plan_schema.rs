//! The plan's probe documents (`sync plan linear`) held to Linear's published schema, as
//! `tests/schema.rs` holds the sync's: Linear refuses an invalid document whole, so a count
//! the simulator answers but Linear does not have would fail every plan against Linear.
//!
//! The schema is read from `../shared/oracles/linear/schema.graphql` (it cannot be committed
//! here); without it the test reports a skip, which fails under CI.

#![allow(clippy::expect_used)]

use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use headroom_linear::sync::plan;

fn linear_schema(test: &str) -> Option<Valid<Schema>> {
    let text = headroom_testkit::oracles::read(test, "linear/schema.graphql")?;
    match Schema::parse_and_validate(text, "linear/schema.graphql") {
        Ok(valid) => Some(valid),
        Err(e) => panic!(
            "Linear's published schema no longer validates: {}",
            e.errors
        ),
    }
}

#[test]
fn every_document_of_the_plans_probe_is_valid_against_linears_schema() {
    let test = "every_document_of_the_plans_probe_is_valid_against_linears_schema";
    let Some(schema) = linear_schema(test) else {
        return;
    };
    assert_eq!(plan::DOCUMENTS.len(), 3);
    let mut failures = Vec::new();
    for d in plan::DOCUMENTS {
        if let Err(e) =
            ExecutableDocument::parse_and_validate(&schema, d.text, format!("{}.graphql", d.name))
        {
            failures.push(format!("{}:\n{}", d.name, e.errors));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The count the probe leans on takes the argument it is given.
    let wrong = plan::PLAN_TEAMS.text.replace(
        "issueCount(includeArchived: true)",
        "issueCount(archived: true)",
    );
    assert!(ExecutableDocument::parse_and_validate(&schema, wrong, "wrong.graphql").is_err());
}
