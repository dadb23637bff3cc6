//! Validation of a document against GitHub's published schema, with GitHub's wording
//! of the errors, before anything runs.

use super::*;

/// GitHub's published schema (the vendored `schemas/github/schema.graphql`), parsed once.
pub(super) static GITHUB_SCHEMA: LazyLock<
    apollo_compiler::validation::Valid<apollo_compiler::Schema>,
> = LazyLock::new(|| {
    const SDL: &str = include_str!("../../../../schemas/github/schema.graphql");
    match apollo_compiler::Schema::parse_and_validate(SDL, "github.graphql") {
        Ok(valid) => valid,
        // GitHub's SDL defines two fields of `EnterpriseOwnerInfo` twice, which strict SDL
        // validation refuses; GitHub serves it as it is, and documents validate against
        // it correctly.
        Err(e) => apollo_compiler::validation::Valid::assume_valid(e.partial),
    }
});

/// GitHub's published GraphQL schema, the one every incoming document is validated against.
pub fn github_schema() -> &'static apollo_compiler::validation::Valid<apollo_compiler::Schema> {
    &GITHUB_SCHEMA
}

/// Validates a document against GitHub's schema, as GitHub does before running anything.
/// `Err` holds the `errors` entries GitHub would answer with: a `message` and its
/// `locations`, worded like GitHub's where the simulator knows GitHub's wording.
pub fn validate(query: &str) -> Result<(), Vec<serde_json::Value>> {
    let Err(e) =
        apollo_compiler::ExecutableDocument::parse_and_validate(github_schema(), query, "query")
    else {
        return Ok(());
    };
    Err(e
        .errors
        .iter()
        .map(|d| {
            let message = github_wording(&d.error.to_string());
            let mut entry = serde_json::json!({ "message": message });
            if let Some(range) = d.line_column_range() {
                entry["locations"] = serde_json::json!([
                    { "line": range.start.line, "column": range.start.column }
                ]);
            }
            entry
        })
        .collect())
}

/// GitHub's wording of a validation message, where it is known; apollo-compiler's otherwise.
pub(super) fn github_wording(message: &str) -> String {
    // apollo-compiler: "type `RepositoryOwner` does not have a field `databaseId`".
    if let Some(rest) = message.strip_prefix("type `")
        && let Some((ty, rest)) = rest.split_once("` does not have a field `")
        && let Some(field) = rest.strip_suffix('`')
    {
        return format!("Field '{field}' doesn't exist on type '{ty}'");
    }
    message.to_owned()
}
