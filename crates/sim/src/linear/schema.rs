//! The Linear schema subset the simulator serves (`schema.graphql`, types, fields, arguments
//! and nullability exactly Linear's), the validation of every document against it before
//! anything runs, and the bodies of Linear's refusals.

use std::sync::LazyLock;

use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};
use serde_json::{Value, json};

/// The subset's SDL, as kept in the project.
pub const SUBSET_SDL: &str = include_str!("schema.graphql");

static SUBSET: LazyLock<Valid<Schema>> = LazyLock::new(|| {
    match Schema::parse_and_validate(SUBSET_SDL, "linear-subset.graphql") {
        Ok(valid) => valid,
        // A unit test proves the SDL valid; a broken edit must not take the simulator down.
        Err(e) => Valid::assume_valid(e.partial),
    }
});

/// The subset, parsed and validated once.
pub fn subset() -> &'static Valid<Schema> {
    &SUBSET
}

/// Why a document was refused before it ran.
#[derive(Debug)]
pub(crate) enum Refused {
    /// Not GraphQL at all (`GRAPHQL_PARSE_FAILED`).
    Syntax(Vec<Value>),
    /// Not valid against the schema (`GRAPHQL_VALIDATION_FAILED`).
    Invalid(Vec<Value>),
}

/// Parses and validates `query` against the subset.
pub(crate) fn validate(query: &str) -> Result<Valid<ExecutableDocument>, Refused> {
    if let Err(e) = apollo_compiler::ast::Document::parse(query, "query.graphql") {
        return Err(Refused::Syntax(entries(&e.errors, "GRAPHQL_PARSE_FAILED")));
    }
    ExecutableDocument::parse_and_validate(subset(), query, "query.graphql")
        .map_err(|e| Refused::Invalid(entries(&e.errors, "GRAPHQL_VALIDATION_FAILED")))
}

fn entries(errors: &apollo_compiler::validation::DiagnosticList, code: &str) -> Vec<Value> {
    errors
        .iter()
        .map(|d| {
            let mut entry = json!({
                "message": graphql_js_wording(&d.error.to_string()),
                "extensions": { "code": code, "type": "graphql error", "userError": true },
            });
            if let Some(range) = d.line_column_range() {
                entry["locations"] =
                    json!([{ "line": range.start.line, "column": range.start.column }]);
            }
            entry
        })
        .collect()
}

/// Linear runs graphql-js: its wording of the commonest validation message, apollo-compiler's
/// for the rest.
fn graphql_js_wording(message: &str) -> String {
    if let Some(rest) = message.strip_prefix("type `")
        && let Some((ty, rest)) = rest.split_once("` does not have a field `")
        && let Some(field) = rest.strip_suffix('`')
    {
        return format!("Cannot query field \"{field}\" on type \"{ty}\".");
    }
    message.to_owned()
}

/// One error entry with Linear's extensions.
fn linear_error(message: &str, kind: &str, code: &str, status: u16, presentable: &str) -> Value {
    json!({
        "message": message,
        "extensions": {
            "type": kind,
            "code": code,
            "statusCode": status,
            "userError": true,
            "userPresentableMessage": presentable,
            "meta": {},
            "http": { "status": status },
        }
    })
}

/// The answer to an unknown or missing key (sent with HTTP 401).
pub(crate) fn unauthenticated() -> Value {
    json!({ "errors": [linear_error(
        "Authentication required, not authenticated",
        "authentication error",
        "AUTHENTICATION_ERROR",
        401,
        "You need to authenticate to access this operation.",
    )]})
}

/// The answer to a spent budget (sent with HTTP 400; `statusCode` 429 inside, as observed).
pub(crate) fn ratelimited() -> Value {
    json!({ "errors": [linear_error(
        "Rate limit exceeded",
        "ratelimited",
        "RATELIMITED",
        429,
        "Rate limit exceeded. Please try again later.",
    )]})
}

/// The answer to a document over the per-query maximum (sent with HTTP 400).
pub(crate) fn too_complex(complexity: f64, max: u64) -> Value {
    json!({ "errors": [linear_error(
        "Query too complex",
        "invalid input",
        "INPUT_ERROR",
        400,
        &format!(
            "The query is too complex. Complexity: {complexity}. Maximum allowed complexity: {max}."
        ),
    )]})
}

/// The answer to a body that is not a GraphQL request.
pub(crate) fn bad_request(message: &str) -> Value {
    json!({ "errors": [{ "message": message, "extensions": { "code": "BAD_REQUEST" } }] })
}

/// The extensions of an entity that does not exist (`issue(id:)` with an unknown id).
pub(crate) fn not_found_extensions(entity: &str) -> Value {
    linear_error(
        &format!("Entity not found: {entity}"),
        "invalid input",
        "INPUT_ERROR",
        400,
        &format!("Could not find referenced {entity}."),
    )["extensions"]
        .clone()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_subset_sdl_is_a_valid_schema() {
        if let Err(e) = Schema::parse_and_validate(SUBSET_SDL, "linear-subset.graphql") {
            panic!("the Linear subset does not validate: {}", e.errors);
        }
    }

    #[test]
    fn an_unknown_field_is_refused_in_graphql_js_words() {
        let Err(Refused::Invalid(errors)) = validate("{ viewer { id nickname } }") else {
            panic!("an unknown field must be refused");
        };
        assert_eq!(
            errors[0]["message"],
            "Cannot query field \"nickname\" on type \"User\"."
        );
        assert_eq!(errors[0]["extensions"]["code"], "GRAPHQL_VALIDATION_FAILED");
        assert!(matches!(
            validate("{ viewer { id "),
            Err(Refused::Syntax(_))
        ));
        assert!(validate("{ viewer { id name } }").is_ok());
    }
}
