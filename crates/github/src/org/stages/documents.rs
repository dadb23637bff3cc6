//! Every GraphQL document the stages can send, for the schema test.

use super::connection::*;
use super::{
    branches::*, issue_comments::*, org::*, projects::*, pull_requests::*, repositories::*,
};

// ------------------------------------------------------------------------ every document

/// The per-repository connections of the stages, by stage: what the walk and the probes
/// build their documents from.
pub(super) const CONNECTIONS: [(&str, &RepoConnection); 5] = [
    (super::super::names::REPOSITORIES, &ISSUES_CONNECTION),
    (super::super::names::PROJECTS, &REPOSITORY_PROJECTS),
    (
        super::super::names::ISSUE_COMMENTS,
        &ISSUE_COMMENTS_CONNECTION,
    ),
    (
        super::super::names::PULL_REQUESTS,
        &PULL_REQUESTS_CONNECTION,
    ),
    (super::super::names::BRANCHES, &BRANCHES_CONNECTION),
];

/// Every GraphQL document the stages can send, each with a name that says which stage sends
/// it and why: the fixed queries, and the probes of every batch size from 1 to
/// [`PROBE_BATCH`] of every connection that has them, built by [`probe_query`] as the stage
/// builds them. Page sizes are variables, so one document covers every page size.
pub(crate) fn documents() -> Vec<(String, String)> {
    use super::super::names;
    let mut out: Vec<(String, String)> = [
        (format!("{}.organization", names::ORG), ORG_QUERY),
        (format!("{}.membersWithRole", names::ORG), MEMBERS_QUERY),
        (format!("{}.teams", names::ORG), TEAMS_QUERY),
        (format!("{}.repositories", names::REPOSITORIES), REPOS_QUERY),
        (
            format!("{}.organization.projectsV2", names::PROJECTS),
            ORG_PROJECTS_QUERY,
        ),
        (
            format!("{}.organization.projectV2", names::PROJECTS),
            ORG_PROJECT_QUERY,
        ),
    ]
    .into_iter()
    .map(|(name, doc)| (name, doc.to_owned()))
    .collect();
    for (stage, spec) in CONNECTIONS {
        out.push((
            format!("{stage}.repository.{}", spec.connection),
            spec.query.to_owned(),
        ));
        if let Some(nested) = &spec.nested {
            out.push((
                format!("{stage}.repository.{}.{}", nested.parent, nested.field),
                nested.query.to_owned(),
            ));
        }
        let newest_first = match spec.incremental {
            Incremental::Full => continue,
            Incremental::Since(_) => false,
            Incremental::NewestFirst(_) => true,
        };
        for size in 1..=PROBE_BATCH {
            let names: Vec<String> = (0..size).map(|k| format!("repo{k}")).collect();
            let batch: Vec<(&str, &str, &str)> = names
                .iter()
                .map(|n| ("acme", n.as_str(), "2027-01-15T08:00:00Z"))
                .collect();
            let (query, _) = probe_query(spec.connection, newest_first, &batch);
            out.push((format!("{stage}.probe.{}.{size}", spec.connection), query));
        }
    }
    out
}
