//! The complexity Linear charges a document, estimated before it is sent (PROVIDER-FACTS.md,
//! Linear, Rate limits): 0.1 per scalar field, 1 per object, and a connection multiplies what
//! it selects by its page size (`first` or `last`, 50 when neither is given); the total is
//! rounded up. A single document over [`MAX_PER_QUERY`] is refused whole by Linear, so a page
//! size is chosen to stay under it.
//!
//! A connection is recognised without the schema: a field given `first` or `last`, or one
//! selecting `nodes`, `edges` or `pageInfo`. The estimate is the governor's ask; the answer's
//! `X-Complexity` is the truth, and calibration compares the two.

use std::collections::HashMap;

use graphql_parser::query::{
    Definition, Document, Field, OperationDefinition, Selection, SelectionSet, Value,
};
use serde_json::Value as Json;

/// Linear refuses any single document above this many points.
pub const MAX_PER_QUERY: u64 = 10_000;

/// A connection's page size when the document names none.
pub const DEFAULT_PAGE: u64 = 50;

/// Why a document could not be estimated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ComplexityError {
    /// Not a GraphQL document.
    #[error("not a GraphQL document: {0}")]
    Parse(String),
    /// A fragment spread names no fragment of the document.
    #[error("fragment {0} is not defined")]
    UnknownFragment(String),
}

/// Tenths of a point, so that sums stay exact.
type Tenths = u64;

struct Walk<'a> {
    fragments: HashMap<&'a str, &'a SelectionSet<'a, &'a str>>,
    variables: &'a Json,
    defaults: HashMap<&'a str, u64>,
}

/// The points Linear will charge `query` with `variables` (a JSON object, or null).
pub fn estimate(query: &str, variables: &Json) -> Result<u64, ComplexityError> {
    let document: Document<'_, &str> =
        graphql_parser::parse_query(query).map_err(|e| ComplexityError::Parse(e.to_string()))?;
    let mut walk = Walk {
        fragments: HashMap::new(),
        variables,
        defaults: HashMap::new(),
    };
    for definition in &document.definitions {
        if let Definition::Fragment(f) = definition {
            walk.fragments.insert(f.name, &f.selection_set);
        }
    }
    let mut tenths: Tenths = 0;
    for definition in &document.definitions {
        let Definition::Operation(op) = definition else {
            continue;
        };
        let (selection_set, variable_definitions) = match op {
            OperationDefinition::SelectionSet(s) => (s, &[][..]),
            OperationDefinition::Query(q) => (&q.selection_set, &q.variable_definitions[..]),
            OperationDefinition::Mutation(m) => (&m.selection_set, &m.variable_definitions[..]),
            OperationDefinition::Subscription(s) => (&s.selection_set, &s.variable_definitions[..]),
        };
        for v in variable_definitions {
            if let Some(Value::Int(n)) = &v.default_value
                && let Some(n) = n.as_i64()
            {
                walk.defaults.insert(v.name, u64::try_from(n).unwrap_or(0));
            }
        }
        tenths = tenths.saturating_add(walk.selections(selection_set, 1, 0)?);
    }
    Ok(tenths.div_ceil(10))
}

/// How deep fragments may nest before the walk stops counting (a cycle is invalid GraphQL).
const MAX_DEPTH: usize = 64;

impl<'a> Walk<'a> {
    /// The tenths charged for `set`, each selection repeated `times`.
    fn selections(
        &self,
        set: &'a SelectionSet<'a, &'a str>,
        times: u64,
        depth: usize,
    ) -> Result<Tenths, ComplexityError> {
        if depth > MAX_DEPTH {
            return Ok(0);
        }
        let mut sum: Tenths = 0;
        for selection in &set.items {
            let cost = match selection {
                Selection::Field(field) => self.field(field, times, depth)?,
                Selection::InlineFragment(inline) => {
                    self.selections(&inline.selection_set, times, depth + 1)?
                }
                Selection::FragmentSpread(spread) => {
                    let set = self.fragments.get(spread.fragment_name).ok_or_else(|| {
                        ComplexityError::UnknownFragment(spread.fragment_name.to_owned())
                    })?;
                    self.selections(set, times, depth + 1)?
                }
            };
            sum = sum.saturating_add(cost);
        }
        Ok(sum)
    }

    fn field(
        &self,
        field: &'a Field<'a, &'a str>,
        times: u64,
        depth: usize,
    ) -> Result<Tenths, ComplexityError> {
        if field.selection_set.items.is_empty() {
            // A scalar (`__typename` included): a tenth of a point per row.
            return Ok(times);
        }
        let own = times.saturating_mul(10);
        let inner = if is_connection(field) {
            times.saturating_mul(self.page_size(field))
        } else {
            times
        };
        Ok(own.saturating_add(self.selections(&field.selection_set, inner, depth + 1)?))
    }

    /// `first` or `last`, as a literal, a variable or a variable's default; 50 otherwise.
    fn page_size(&self, field: &Field<'a, &'a str>) -> u64 {
        field
            .arguments
            .iter()
            .filter(|(name, _)| *name == "first" || *name == "last")
            .find_map(|(_, value)| match value {
                Value::Int(n) => n.as_i64().and_then(|n| u64::try_from(n).ok()),
                Value::Variable(name) => self
                    .variables
                    .get(*name)
                    .and_then(Json::as_u64)
                    .or_else(|| self.defaults.get(name).copied()),
                _ => None,
            })
            .unwrap_or(DEFAULT_PAGE)
    }
}

fn is_connection<'a>(field: &Field<'a, &'a str>) -> bool {
    field
        .arguments
        .iter()
        .any(|(name, _)| *name == "first" || *name == "last")
        || field.selection_set.items.iter().any(|s| {
            matches!(s, Selection::Field(f) if matches!(f.name, "nodes" | "edges" | "pageInfo"))
        })
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;
    use crate::documents;

    #[test]
    fn objects_scalars_and_connections_are_charged_as_linear_documents_them() {
        // viewer (1) + id (0.1) = 1.1 → 2.
        assert_eq!(estimate("{ viewer { id } }", &json!(null)), Ok(2));
        // issues (1) + its 10 `nodes` objects (10) + 10 × 2 scalars (2): the connection
        // multiplies everything it selects.
        let q = "{ issues(first: 10) { nodes { id title } } }";
        assert_eq!(estimate(q, &json!(null)), Ok(13));
        // No `first`: Linear's 50 rows.
        let q = "{ issues { nodes { id title } } }";
        assert_eq!(estimate(q, &json!(null)), Ok(61));
        // A nested connection without `first` charges 50 per parent row.
        let nested = "{ issues(first: 10) { nodes { id labels { nodes { id } } } } }";
        let capped = "{ issues(first: 10) { nodes { id labels(first: 5) { nodes { id } } } } }";
        let (nested, capped) = (
            estimate(nested, &json!(null)).expect("valid"),
            estimate(capped, &json!(null)).expect("valid"),
        );
        assert!(nested > 5 * capped, "{nested} vs {capped}");
    }

    #[test]
    fn a_page_size_comes_from_the_variables_or_their_defaults() {
        let q = "query Q($n: Int = 20) { issues(first: $n) { nodes { id } } }";
        assert_eq!(estimate(q, &json!({ "n": 5 })), Ok(7));
        assert_eq!(estimate(q, &json!({})), Ok(23));
        assert!(estimate("{ issues(", &json!(null)).is_err());
        let unknown = "{ issues { ...Missing } }";
        assert_eq!(
            estimate(unknown, &json!(null)),
            Err(ComplexityError::UnknownFragment("Missing".into()))
        );
    }

    #[test]
    fn every_document_a_sync_sends_fits_linears_maximum_at_a_page_of_100() {
        for d in documents::ALL {
            let vars = json!({ "first": 100, "after": null, "filter": null, "issue": "x" });
            let points = estimate(d.text, &vars).expect("estimable");
            assert!(points <= MAX_PER_QUERY, "{}: {points}", d.name);
            assert!(points > 0, "{}", d.name);
        }
    }

    proptest! {
        /// A larger page never costs less, and a page's cost grows at most in proportion.
        #[test]
        fn a_larger_page_never_costs_less(a in 1u64..500, b in 1u64..500) {
            let (small, large) = (a.min(b), a.max(b));
            for d in documents::ALL {
                let cost = |n: u64| estimate(d.text, &json!({ "first": n, "issue": "x" }))
                    .expect("estimable");
                let (c_small, c_large) = (cost(small), cost(large));
                prop_assert!(c_small <= c_large, "{}: {c_small} > {c_large}", d.name);
                // Doubling the page at most doubles the cost, plus the fixed part.
                prop_assert!(c_large <= c_small * large.div_ceil(small) + 2,
                    "{}: {c_large} vs {c_small}", d.name);
            }
        }

        /// Any text, valid or not, is estimated or refused: never a panic.
        #[test]
        fn any_text_is_estimated_or_refused(text in ".{0,200}") {
            let _ = estimate(&text, &json!(null));
        }
    }
}
