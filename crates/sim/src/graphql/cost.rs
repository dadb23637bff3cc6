//! GitHub's GraphQL cost rules: the nodes a query may touch and the points it costs,
//! computed from the document before it runs.

use super::*;

/// The most nodes one call may ask for.
pub const NODE_LIMIT: u64 = 500_000;

/// What a query costs, by GitHub's rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueryCost {
    /// Points: requests needed to fill every connection (each connection's parent count
    /// multiplied through), divided by 100, rounded, at least 1.
    pub cost: u64,
    /// Nodes the query may return, at most.
    pub node_count: u64,
    /// The requests before dividing by 100.
    pub requests: u64,
    /// Whether the operation is a mutation.
    pub is_mutation: bool,
}

/// Why a query was refused before running.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CostError {
    /// GitHub's `errors[].type`, when it has one.
    pub kind: Option<&'static str>,
    /// The message.
    pub message: String,
}

impl CostError {
    fn new(kind: Option<&'static str>, message: String) -> Self {
        Self { kind, message }
    }
}

pub(super) type Fragments = HashMap<Name, Positioned<FragmentDefinition>>;

pub(super) struct Walk<'a> {
    pub(super) fragments: &'a Fragments,
    pub(super) vars: &'a serde_json::Map<String, serde_json::Value>,
    pub(super) defaults: HashMap<String, i64>,
    pub(super) requests: u64,
    pub(super) nodes: u64,
    pub(super) visits: u64,
}

/// Fields visited while costing one query, fragments expanded: beyond this the query is
/// refused (nested fragment spreads could otherwise make the walk exponential).
pub(super) const MAX_VISITS: u64 = 100_000;

impl Walk<'_> {
    fn int_arg(&self, v: &async_graphql_value::Value) -> Option<i64> {
        match v {
            async_graphql_value::Value::Number(n) => n.as_i64(),
            async_graphql_value::Value::Variable(name) => self
                .vars
                .get(name.as_str())
                .and_then(|j| j.as_i64())
                .or_else(|| self.defaults.get(name.as_str()).copied()),
            _ => None,
        }
    }

    fn selection_set(
        &mut self,
        set: &SelectionSet,
        multiplier: u64,
        depth: u32,
    ) -> Result<(), CostError> {
        if depth > 64 {
            return Err(CostError::new(
                None,
                "Query has too many nested fragments or fields.".to_owned(),
            ));
        }
        for item in &set.items {
            self.visits += 1;
            if self.visits > MAX_VISITS {
                return Err(CostError::new(
                    None,
                    "Query is too complex to run.".to_owned(),
                ));
            }
            match &item.node {
                Selection::Field(field) => {
                    let field = &field.node;
                    let name = field.name.node.as_str();
                    let mut size: Option<i64> = None;
                    let mut arg_name = "first";
                    for (arg, value) in &field.arguments {
                        let a = arg.node.as_str();
                        if a == "first" || a == "last" {
                            arg_name = if a == "first" { "first" } else { "last" };
                            size = match self.int_arg(&value.node) {
                                Some(n) => Some(n),
                                None => continue,
                            };
                        }
                    }
                    let mut child = multiplier;
                    if let Some(n) = size {
                        if !(1..=100).contains(&n) {
                            let message = if n > 100 {
                                format!(
                                    "Requesting {n} records on the `{name}` connection exceeds the `{arg_name}` limit of 100 records."
                                )
                            } else {
                                format!(
                                    "`{arg_name}` on the `{name}` connection must be between 1 and 100."
                                )
                            };
                            return Err(CostError::new(Some("EXCESSIVE_PAGINATION"), message));
                        }
                        // Safe: 1..=100.
                        let n = n as u64;
                        self.requests = self.requests.saturating_add(multiplier);
                        child = multiplier.saturating_mul(n);
                        self.nodes = self.nodes.saturating_add(child);
                        if self.nodes > NODE_LIMIT {
                            return Err(CostError::new(
                                Some("MAX_NODE_LIMIT_EXCEEDED"),
                                format!(
                                    "By the time this query traverses to the {name} connection, it is requesting up to {} possible nodes which exceeds the maximum limit of 500,000.",
                                    self.nodes
                                ),
                            ));
                        }
                    }
                    self.selection_set(&field.selection_set.node, child, depth + 1)?;
                }
                Selection::FragmentSpread(spread) => {
                    let name = &spread.node.fragment_name.node;
                    let fragment = self.fragments.get(name).ok_or_else(|| {
                        CostError::new(None, format!("Fragment {name} was used, but not defined"))
                    })?;
                    self.selection_set(&fragment.node.selection_set.node, multiplier, depth + 1)?;
                }
                Selection::InlineFragment(inline) => {
                    self.selection_set(&inline.node.selection_set.node, multiplier, depth + 1)?;
                }
            }
        }
        Ok(())
    }
}

/// Computes GitHub's cost of a query: for every connection (a field with `first` or `last`),
/// the requests needed to fill it are the product of the sizes of the connections above it;
/// their sum divided by 100 and rounded, at least 1, is the cost. The node count is the sum of
/// every connection's size times the sizes above it.
pub fn query_cost(
    query: &str,
    operation_name: Option<&str>,
    variables: &serde_json::Value,
) -> Result<QueryCost, CostError> {
    let doc: ExecutableDocument =
        parse_query(query).map_err(|e| CostError::new(None, format!("Parse error: {e}")))?;
    let op = match &doc.operations {
        DocumentOperations::Single(op) => op,
        DocumentOperations::Multiple(ops) => match operation_name {
            Some(n) => ops
                .get(n)
                .ok_or_else(|| CostError::new(None, format!("Unknown operation named \"{n}\".")))?,
            None => {
                return Err(CostError::new(
                    None,
                    "An operation name is required when the document has several operations."
                        .to_owned(),
                ));
            }
        },
    };
    let empty = serde_json::Map::new();
    let vars = variables.as_object().unwrap_or(&empty);
    let mut defaults = HashMap::new();
    for def in &op.node.variable_definitions {
        if let Some(async_graphql::Value::Number(n)) =
            def.node.default_value.as_ref().map(|d| d.node.clone())
            && let Some(n) = n.as_i64()
        {
            defaults.insert(def.node.name.node.to_string(), n);
        }
    }
    let mut walk = Walk {
        fragments: &doc.fragments,
        vars,
        defaults,
        requests: 0,
        nodes: 0,
        visits: 0,
    };
    walk.selection_set(&op.node.selection_set.node, 1, 0)?;
    // Round half up, as `round()` does for positive numbers.
    let cost = ((walk.requests as f64) / 100.0).round() as u64;
    Ok(QueryCost {
        cost: cost.max(1),
        node_count: walk.nodes,
        requests: walk.requests,
        is_mutation: op.node.ty == OperationType::Mutation,
    })
}
