//! Sending the plan's probe, every request in `linear_workspace`, spending a request and its
//! estimated complexity as the stages' requests do: the teams with their `issueCount`
//! ([`PLAN_TEAMS`]), the first page of each small list ([`PLAN_LISTS`], paged on with the
//! stage's own document where a list has more), and [`ISSUE_SAMPLE`] issues with the size of
//! their children ([`PLAN_SAMPLE`]). Shared by `sync plan linear` and `sync linear --estimate`.
//! `tests/plan_schema.rs` holds these documents to Linear's published schema.

use headroom_core::route;
use headroom_http::{ApiError, Client, Credential};
use serde_json::{Value, json};

use super::super::{Selection, list, page, send};
use super::{ISSUE_SAMPLE, IssueSample, LinearProbe};
use crate::documents::Document;

/// Teams, with how many issues each holds (archived ones too: the issues stage asks for them).
pub const PLAN_TEAMS: Document = Document {
    name: "HeadroomPlanTeams",
    entity: "teams",
    incremental: false,
    text: "query HeadroomPlanTeams($first: Int!, $after: String) {
  teams(first: $first, after: $after, orderBy: updatedAt, includeArchived: true) {
    nodes { id key issueCount(includeArchived: true) }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// The first page of each small list, ids only, asked as its stage asks it (same order,
/// arguments and team filter), so that a list with more goes on with the stage's document
/// from this page's cursor.
pub const PLAN_LISTS: Document = Document {
    name: "HeadroomPlanLists",
    entity: "lists",
    incremental: false,
    text:
        "query HeadroomPlanLists($first: Int!, $states: WorkflowStateFilter, $cycles: CycleFilter) {
  users(first: $first, orderBy: updatedAt, includeDisabled: true) {
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
  teamMemberships(first: $first, orderBy: updatedAt) {
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
  workflowStates(first: $first, orderBy: updatedAt, filter: $states) {
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
  issueLabels(first: $first, orderBy: updatedAt) {
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
  projects(first: $first, orderBy: updatedAt, includeArchived: true) {
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
  cycles(first: $first, orderBy: updatedAt, includeArchived: true, filter: $cycles) {
    nodes { id }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Issues with the size of their history, comments and attachments (up to [`NESTED`] of
/// each: a count at the cap is a lower bound). `$filter` picks them by number, spread over
/// each team's issues ([`sample_numbers`]): the first page in any order would stand for the
/// others badly (the issues changed last hold the most history).
pub const PLAN_SAMPLE: Document = Document {
    name: "HeadroomPlanSample",
    entity: "issues",
    incremental: false,
    text: "query HeadroomPlanSample($first: Int!, $filter: IssueFilter) {
  issues(first: $first, includeArchived: true, filter: $filter) {
    nodes {
      id
      history(first: 60) { nodes { id } }
      comments(first: 25) { nodes { id } }
      attachments(first: 25) { nodes { id } }
    }
  }
}",
};

/// The sample's nested page sizes (history, comments, attachments), as [`PLAN_SAMPLE`] asks.
pub const NESTED: [u64; 3] = [60, 25, 25];

/// Every document the probe sends.
pub const DOCUMENTS: &[Document] = &[PLAN_TEAMS, PLAN_LISTS, PLAN_SAMPLE];

/// Why the probe could not be taken.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ProbeError {
    /// A request failed (its own words: exit hints read them).
    #[error(transparent)]
    Api(#[from] ApiError),
    /// Linear answered with errors, or something the probe cannot read.
    #[error("{0}")]
    Answer(String),
}

/// The probe's requests, counted with their estimated points.
struct Sender<'a> {
    client: &'a Client,
    credential: Option<&'a Credential>,
    requests: u64,
    points: u64,
}

impl Sender<'_> {
    /// `doc` with `vars`: the answer's `data`.
    async fn data(&mut self, doc: &Document, vars: Value) -> Result<Value, ProbeError> {
        let points = page::estimate(doc, &vars).map_err(ProbeError::Answer)?;
        let request =
            send::request(doc, &vars, points, route::LINEAR_SYNC_PLAN).credential(self.credential);
        self.requests += 1;
        self.points += points;
        let body: Value = self.client.send(request).await?.json()?;
        if let Some(message) = page::errors(&body) {
            return Err(ProbeError::Answer(format!("{}: {message}", doc.name)));
        }
        match body.get("data") {
            Some(data @ Value::Object(_)) => Ok(data.clone()),
            _ => Err(ProbeError::Answer(format!("{}: no data", doc.name))),
        }
    }
}

/// A connection's rows and next cursor.
fn connection(
    doc: &Document,
    conn: Option<&Value>,
) -> Result<(Vec<Value>, Option<String>), ProbeError> {
    page::connection(conn.unwrap_or(&Value::Null))
        .map_err(|e| ProbeError::Answer(format!("{}: {e}", doc.name)))
}

/// Probes the workspace for `selection` with `credential`.
pub async fn probe(
    client: &Client,
    credential: Option<&Credential>,
    selection: &Selection,
) -> Result<LinearProbe, ProbeError> {
    let mut s = Sender {
        client,
        credential,
        requests: 0,
        points: 0,
    };
    let first = page::DEFAULT_FIRST;
    let mut probe = LinearProbe::default();
    let mut after: Option<String> = None;
    let mut teams = Vec::new();
    loop {
        let vars = json!({ "first": first, "after": after });
        let data = s.data(&PLAN_TEAMS, vars).await?;
        let (nodes, next) = connection(&PLAN_TEAMS, data.get("teams"))?;
        for team in &nodes {
            let key = team.get("key").and_then(Value::as_str).unwrap_or_default();
            let issues = team.get("issueCount").and_then(Value::as_u64).unwrap_or(0);
            teams.push((key.to_owned(), issues));
            probe.teams += 1;
            probe.workspace_issues += issues;
            if selection.teams.is_empty() || selection.teams.iter().any(|t| t == key) {
                probe.issues += issues;
            }
        }
        match next {
            Some(n) => after = Some(n),
            None => break,
        }
    }
    let by_team = page::filter(None, &selection.teams, true);
    let vars = json!({ "first": first, "states": by_team, "cycles": by_team });
    let data = s.data(&PLAN_LISTS, vars).await?;
    let lists: [(&list::Family, &mut u64); 6] = [
        (&list::USERS, &mut probe.users),
        (&list::TEAM_MEMBERSHIPS, &mut probe.memberships),
        (&list::WORKFLOW_STATES, &mut probe.workflow_states),
        (&list::LABELS, &mut probe.labels),
        (&list::PROJECTS, &mut probe.projects),
        (&list::CYCLES, &mut probe.cycles),
    ];
    for (family, count) in lists {
        let (nodes, mut next) = connection(&PLAN_LISTS, data.get(family.root))?;
        *count = nodes.len() as u64;
        let filter = if family.by_team {
            by_team.clone()
        } else {
            Value::Null
        };
        // More than a page: the rest as the stage will ask it.
        while let Some(cursor) = next {
            let vars = page::list_variables(family.doc, first, Some(&cursor), &filter);
            let data = s.data(family.doc, vars).await?;
            let (nodes, more) = connection(family.doc, data.get(family.root))?;
            *count += nodes.len() as u64;
            next = more;
        }
    }
    probe.samples = sample(&mut s, &teams).await?;
    probe.requests = s.requests;
    probe.points = s.points;
    Ok(probe)
}

/// Issue numbers to sample per team (key, issues): [`ISSUE_SAMPLE`] in all, shared out in
/// proportion to the teams' issues (at most one per team past [`ISSUE_SAMPLE`] teams), each
/// team's spread evenly over its numbers (`1..=issues`; a number deleted is a smaller sample).
pub fn sample_numbers(teams: &[(String, u64)]) -> Vec<(String, Vec<u64>)> {
    let want = u64::from(ISSUE_SAMPLE);
    let total: u64 = teams.iter().map(|(_, n)| n).sum();
    let mut slots: Vec<u64> = teams
        .iter()
        .map(|(_, n)| (want * n) / total.max(1))
        .collect();
    // What the rounding down left, one by one to the teams with room, largest first.
    let mut order: Vec<usize> = (0..teams.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(teams[i].1));
    let mut left = want.min(total).saturating_sub(slots.iter().sum());
    while left > 0 {
        let before = left;
        for &i in &order {
            if left > 0 && slots[i] < teams[i].1 {
                slots[i] += 1;
                left -= 1;
            }
        }
        if left == before {
            break;
        }
    }
    teams
        .iter()
        .zip(slots)
        .filter(|(_, k)| *k > 0)
        .map(|((key, n), k)| {
            let numbers = (0..k).map(|i| (2 * i + 1) * n / (2 * k) + 1).collect();
            (key.clone(), numbers)
        })
        .collect()
}

/// The sample's `$filter`: each team's numbers.
fn sample_filter(numbers: &[(String, Vec<u64>)]) -> Value {
    let or: Vec<Value> = numbers
        .iter()
        .map(|(key, n)| json!({ "team": { "key": { "eq": key } }, "number": { "in": n } }))
        .collect();
    json!({ "or": or })
}

/// The sampled issues' children.
async fn sample(
    s: &mut Sender<'_>,
    teams: &[(String, u64)],
) -> Result<Vec<IssueSample>, ProbeError> {
    let numbers = sample_numbers(teams);
    let first: u64 = numbers.iter().map(|(_, n)| n.len() as u64).sum();
    if first == 0 {
        return Ok(Vec::new());
    }
    let vars = json!({ "first": first, "filter": sample_filter(&numbers) });
    let data = s.data(&PLAN_SAMPLE, vars).await?;
    let (nodes, _) = connection(&PLAN_SAMPLE, data.get("issues"))?;
    let count = |issue: &Value, field: &str| {
        issue
            .get(field)
            .and_then(|c| c.get("nodes"))
            .and_then(Value::as_array)
            .map_or(0, |n| n.len() as u64)
    };
    Ok(nodes
        .iter()
        .map(|issue| IssueSample {
            history: count(issue, "history"),
            comments: count(issue, "comments"),
            attachments: count(issue, "attachments"),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::complexity::MAX_PER_QUERY;

    #[test]
    fn the_probes_documents_fit_linears_maximum_and_say_their_nested_sizes() {
        for d in DOCUMENTS {
            let vars = json!({ "first": page::DEFAULT_FIRST, "after": null });
            let points = page::estimate(d, &vars).expect("estimable");
            assert!(points <= MAX_PER_QUERY, "{}: {points}", d.name);
            assert!(d.text.contains(&format!("query {}", d.name)), "{}", d.name);
        }
        let [history, comments, attachments] = NESTED;
        for (field, n) in [
            ("history", history),
            ("comments", comments),
            ("attachments", attachments),
        ] {
            assert!(
                PLAN_SAMPLE.text.contains(&format!("{field}(first: {n})")),
                "{field}"
            );
        }
        // The sample's history reaches past the nested page of an issues page.
        assert!(history > u64::from(crate::documents::NESTED_HISTORY));
    }

    proptest::proptest! {
        /// The sample takes [`ISSUE_SAMPLE`] issues (fewer only when there are fewer), in
        /// proportion to the teams, each a number the team holds, none twice.
        #[test]
        fn the_sample_spreads_over_every_teams_numbers(
            sizes in proptest::collection::vec(0u64..5_000, 1..40),
        ) {
            let teams: Vec<(String, u64)> =
                sizes.iter().enumerate().map(|(i, n)| (format!("T{i}"), *n)).collect();
            let picked = sample_numbers(&teams);
            let total: u64 = sizes.iter().sum();
            let taken: u64 = picked.iter().map(|(_, n)| n.len() as u64).sum();
            proptest::prop_assert_eq!(taken, u64::from(ISSUE_SAMPLE).min(total));
            for (key, numbers) in &picked {
                let n = teams.iter().find(|(k, _)| k == key).map_or(0, |t| t.1);
                proptest::prop_assert!(numbers.iter().all(|&x| (1..=n).contains(&x)));
                let mut unique = numbers.clone();
                unique.dedup();
                proptest::prop_assert_eq!(unique.len(), numbers.len());
            }
        }
    }
}
