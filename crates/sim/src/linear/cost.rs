//! A document's complexity, computed before it runs, by the rule Linear documents: 0.1 point
//! per scalar field, 1 per object, and a connection multiplies its children by its `first`
//! (or `last`; 50 when neither is given); the total is rounded up. Linear publishes the rule,
//! not its code: how a connection's own point and its `pageInfo` count is the simulator's
//! guess (the connection is one object; everything under it, `pageInfo` included, is
//! multiplied).

use apollo_compiler::executable::{Operation, Selection, SelectionSet};
use apollo_compiler::schema::ExtendedType;
use apollo_compiler::validation::Valid;
use apollo_compiler::{ExecutableDocument, Schema};

/// Linear's default page size.
pub const DEFAULT_PAGE: u64 = 50;

/// A document's complexity in tenths of a point (exact), and as Linear reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Complexity {
    /// Tenths of a point.
    pub tenths: u64,
}

impl Complexity {
    /// Rounded up to whole points, as `X-Complexity` reports it.
    pub fn points(self) -> u64 {
        self.tenths.div_ceil(10)
    }

    /// As Linear writes it in its "too complex" message (a float).
    pub fn as_float(self) -> f64 {
        self.tenths as f64 / 10.0
    }
}

/// The complexity of `operation` with `variables`.
pub fn complexity(
    schema: &Valid<Schema>,
    doc: &Valid<ExecutableDocument>,
    operation: &Operation,
    variables: &serde_json::Value,
) -> Complexity {
    let walk = Walk {
        schema,
        doc,
        variables,
    };
    Complexity {
        tenths: walk.set(&operation.selection_set, 0),
    }
}

struct Walk<'a> {
    schema: &'a Schema,
    doc: &'a ExecutableDocument,
    variables: &'a serde_json::Value,
}

impl Walk<'_> {
    fn set(&self, set: &SelectionSet, depth: usize) -> u64 {
        // Validation refuses fragment cycles; the bound only keeps a bug from recursing forever.
        if depth > 64 {
            return 0;
        }
        let mut total: u64 = 0;
        for selection in &set.selections {
            let cost = match selection {
                Selection::Field(f) => self.field(f, depth),
                Selection::InlineFragment(f) => self.set(&f.selection_set, depth + 1),
                Selection::FragmentSpread(s) => s
                    .fragment_def(self.doc)
                    .map_or(0, |d| self.set(&d.selection_set, depth + 1)),
            };
            total = total.saturating_add(cost);
        }
        total
    }

    fn field(&self, f: &apollo_compiler::executable::Field, depth: usize) -> u64 {
        let named = f.definition.ty.inner_named_type();
        let leaf = matches!(
            self.schema.types.get(named),
            None | Some(ExtendedType::Scalar(_)) | Some(ExtendedType::Enum(_))
        );
        if leaf {
            return 1;
        }
        let children = self.set(&f.selection_set, depth + 1);
        if named.as_str().ends_with("Connection") {
            let n = self.page_size(f);
            10u64.saturating_add(n.saturating_mul(children))
        } else {
            10u64.saturating_add(children)
        }
    }

    /// `first`, else `last`, else 50: a literal or a variable's value.
    fn page_size(&self, f: &apollo_compiler::executable::Field) -> u64 {
        for name in ["first", "last"] {
            let Some(arg) = f.arguments.iter().find(|a| a.name == name) else {
                continue;
            };
            let value = match arg.value.as_ref() {
                apollo_compiler::ast::Value::Int(i) => i.try_to_i32().ok().map(i64::from),
                apollo_compiler::ast::Value::Variable(v) => {
                    self.variables.get(v.as_str()).and_then(|x| x.as_i64())
                }
                _ => None,
            };
            if let Some(n) = value {
                return u64::try_from(n).unwrap_or(0);
            }
        }
        DEFAULT_PAGE
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost_of(query: &str, variables: serde_json::Value) -> Complexity {
        let schema = super::super::schema::subset();
        let doc = ExecutableDocument::parse_and_validate(schema, query, "q.graphql")
            .unwrap_or_else(|e| panic!("{e}"));
        let op = doc.operations.get(None).unwrap_or_else(|e| panic!("{e:?}"));
        complexity(schema, &doc, op, &variables)
    }

    #[test]
    fn a_scalar_costs_a_tenth_and_an_object_one_point() {
        let c = cost_of("{ viewer { id name email } }", serde_json::json!({}));
        assert_eq!(c.tenths, 13);
        assert_eq!(c.points(), 2);
    }

    #[test]
    fn a_connection_multiplies_its_children_by_first_or_by_fifty() {
        let q = "query($n: Int) { issues(first: $n) { nodes { id } } }";
        let ten = cost_of(q, serde_json::json!({ "n": 10 }));
        // The connection (1) + 10 × (nodes 1 + id 0.1).
        assert_eq!(ten.tenths, 10 + 10 * 11);
        let default = cost_of("{ issues { nodes { id } } }", serde_json::json!({}));
        assert_eq!(default.tenths, 10 + 50 * 11);
        let nested = cost_of(
            "{ issues(first: 10) { nodes { id comments { nodes { id } } } } }",
            serde_json::json!({}),
        );
        assert_eq!(nested.tenths, 10 + 10 * (10 + 1 + 10 + 50 * 11));
    }
}
