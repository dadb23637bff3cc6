//! GraphQL cost, estimated before sending by GitHub's published rule.
//!
//! For every connection (a field with `first` or `last`), count the requests needed to fill
//! it assuming every enclosing connection returns its full page; add them up, divide by 100,
//! round, and never go below 1. The node count is the sum over connections of the nodes they
//! could return, and GitHub refuses queries over 500,000 nodes. The actual cost comes back in
//! the response's `rateLimit { cost }` and replaces the estimate in the governor.

use std::collections::HashMap;

use graphql_parser::query::{
    Definition, Document, OperationDefinition, Selection, SelectionSet, Value,
};

/// GitHub's limit on nodes per query.
pub const MAX_NODES: u64 = 500_000;

/// What a query is estimated to cost.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub struct QueryCost {
    /// Points, as GitHub charges them.
    pub cost: u32,
    /// Requests the connections need before the division by 100.
    pub requests: u64,
    /// Nodes the query could return.
    pub nodes: u64,
}

/// Why a query cannot be sent as written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CostError {
    /// The text is not GraphQL.
    #[error("GraphQL query does not parse: {0}")]
    Parse(String),
    /// `first`/`last` outside 1–100.
    #[error("`{argument}: {value}` on `{field}` is outside 1-100")]
    PageSize {
        /// The connection field.
        field: String,
        /// `first` or `last`.
        argument: String,
        /// The value given.
        value: i64,
    },
    /// More than 500,000 nodes.
    #[error("query could return {nodes} nodes, over GitHub's limit of 500,000")]
    TooManyNodes {
        /// The node count.
        nodes: u64,
    },
}

/// Worst case assumed for a page size given by a variable nobody set.
const UNKNOWN_PAGE_SIZE: i64 = 100;
/// Fragment spreads nested deeper than this are not followed (cycles are invalid GraphQL).
const MAX_DEPTH: usize = 32;

struct Walk<'a> {
    fragments: HashMap<&'a str, &'a SelectionSet<'a, &'a str>>,
    variables: &'a serde_json::Value,
    defaults: HashMap<&'a str, i64>,
    requests: u64,
    nodes: u64,
}

/// Estimates the cost of `query` with `variables` (a JSON object, or null).
pub fn estimate_cost(query: &str, variables: &serde_json::Value) -> Result<QueryCost, CostError> {
    let document: Document<'_, &str> =
        graphql_parser::parse_query(query).map_err(|e| CostError::Parse(e.to_string()))?;
    let mut walk = Walk {
        fragments: HashMap::new(),
        variables,
        defaults: HashMap::new(),
        requests: 0,
        nodes: 0,
    };
    for definition in &document.definitions {
        if let Definition::Fragment(f) = definition {
            walk.fragments.insert(f.name, &f.selection_set);
        }
    }
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
                walk.defaults.insert(v.name, n);
            }
        }
        walk.selection_set(selection_set, 1, 0)?;
    }
    if walk.nodes > MAX_NODES {
        return Err(CostError::TooManyNodes { nodes: walk.nodes });
    }
    // Round half up, as GitHub's examples do (5101 requests cost 51).
    let cost = (walk.requests + 50) / 100;
    Ok(QueryCost {
        cost: u32::try_from(cost.max(1)).unwrap_or(u32::MAX),
        requests: walk.requests,
        nodes: walk.nodes,
    })
}

impl<'a> Walk<'a> {
    fn page_size(
        &self,
        field: &str,
        argument: &str,
        value: &Value<'a, &'a str>,
    ) -> Result<i64, CostError> {
        let n = match value {
            Value::Int(n) => n.as_i64().unwrap_or(i64::MAX),
            Value::Variable(name) => match self.variables.get(*name) {
                Some(v) => v.as_i64().unwrap_or(UNKNOWN_PAGE_SIZE),
                None => self
                    .defaults
                    .get(name)
                    .copied()
                    .unwrap_or(UNKNOWN_PAGE_SIZE),
            },
            _ => UNKNOWN_PAGE_SIZE,
        };
        if !(1..=100).contains(&n) {
            return Err(CostError::PageSize {
                field: field.to_owned(),
                argument: argument.to_owned(),
                value: n,
            });
        }
        Ok(n)
    }

    fn selection_set(
        &mut self,
        set: &'a SelectionSet<'a, &'a str>,
        multiplier: u64,
        depth: usize,
    ) -> Result<(), CostError> {
        if depth > MAX_DEPTH {
            return Ok(());
        }
        for selection in &set.items {
            match selection {
                Selection::Field(field) => {
                    let mut page = None;
                    for (name, value) in &field.arguments {
                        if *name == "first" || *name == "last" {
                            let n = self.page_size(field.name, name, value)?;
                            page = Some(page.map_or(n, |p: i64| p.max(n)));
                        }
                    }
                    let child_multiplier = match page {
                        Some(n) => {
                            let n = u64::try_from(n).unwrap_or(100);
                            self.requests = self.requests.saturating_add(multiplier);
                            self.nodes = self.nodes.saturating_add(multiplier.saturating_mul(n));
                            multiplier.saturating_mul(n)
                        }
                        None => multiplier,
                    };
                    self.selection_set(&field.selection_set, child_multiplier, depth + 1)?;
                }
                Selection::InlineFragment(inline) => {
                    self.selection_set(&inline.selection_set, multiplier, depth + 1)?;
                }
                Selection::FragmentSpread(spread) => {
                    if let Some(set) = self.fragments.get(spread.fragment_name).copied() {
                        self.selection_set(set, multiplier, depth + 1)?;
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// GitHub's documented example: 1 + 100 + 5,000 requests → 51 points; 305,100 nodes.
    #[test]
    fn githubs_documented_example() {
        let query = r#"
            query {
              viewer {
                login
                repositories(first: 100) {
                  edges { node { id
                    issues(first: 50) {
                      edges { node { id
                        labels(first: 60) { edges { node { id name } } }
                      } }
                    }
                  } }
                }
              }
            }"#;
        let cost = estimate_cost(query, &serde_json::Value::Null).expect("valid");
        assert_eq!(
            cost,
            QueryCost {
                cost: 51,
                requests: 5101,
                nodes: 305_100
            }
        );
    }

    #[test]
    fn small_queries_cost_one() {
        let cost = estimate_cost(
            "{ viewer { login } rateLimit { cost remaining resetAt } }",
            &json!(null),
        )
        .expect("valid");
        assert_eq!(cost.cost, 1);
        assert_eq!(cost.requests, 0);
        let cost = estimate_cost(
            "{ organization(login: \"acme\") { membersWithRole(first: 100) { nodes { login } } } }",
            &json!({}),
        )
        .expect("valid");
        assert_eq!((cost.cost, cost.requests, cost.nodes), (1, 1, 100));
    }

    #[test]
    fn variables_fragments_and_defaults() {
        let query = r#"
            query Repos($org: String!, $n: Int!, $issues: Int = 20) {
              organization(login: $org) {
                repositories(first: $n) { nodes { ...Repo } }
              }
            }
            fragment Repo on Repository {
              name
              issues(first: $issues) { nodes { ... on Issue { comments(last: 10) { totalCount } } } }
            }"#;
        let cost = estimate_cost(query, &json!({"org": "acme", "n": 50})).expect("valid");
        // repositories: 1; issues: 50; comments: 50 × 20 = 1,000 → 1,051 requests → 11 points.
        assert_eq!((cost.requests, cost.cost), (1051, 11));
        assert_eq!(cost.nodes, 50 + 50 * 20 + 50 * 20 * 10);
    }

    #[test]
    fn page_sizes_out_of_range_and_node_limit() {
        for q in [
            "{ viewer { repositories(first: 0) { totalCount } } }",
            "{ viewer { repositories(last: 101) { totalCount } } }",
        ] {
            assert!(
                matches!(
                    estimate_cost(q, &json!(null)),
                    Err(CostError::PageSize { .. })
                ),
                "{q}"
            );
        }
        let q = "{ viewer { a: repositories(first: 100) { nodes { issues(first: 100) { nodes { labels(first: 100) { nodes { name } } } } } } } }";
        assert!(matches!(
            estimate_cost(q, &json!(null)),
            Err(CostError::TooManyNodes { nodes: 1_010_100 })
        ));
        assert!(matches!(
            estimate_cost("{ not graphql", &json!(null)),
            Err(CostError::Parse(_))
        ));
    }
}
