//! Every GraphQL document a Linear workspace sync sends: one per entity, each a Relay page
//! (`first`, `after`) ordered by `updatedAt`, and asked only for what changed since a watermark
//! (`$filter`: `{ updatedAt: { gt: WATERMARK } }`, or null for everything) wherever Linear
//! offers the filter. Team memberships have none and are re-listed; an issue's history lives
//! only under the issue (`issue.history`), with no filter either: its first entries come
//! nested in the issue's page, the rest (if any) by [`ISSUE_HISTORY`].
//!
//! Nested connections always name a small `first`: Linear charges 50 rows per parent for one
//! that does not. `tests/schema.rs` holds every document to Linear's published schema.

/// One document: its operation name, the entity it pages, and its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Document {
    /// The operation's name (`HeadroomIssues`).
    pub name: &'static str,
    /// The entity whose rows it pages (`issues`): the route family's suffix.
    pub entity: &'static str,
    /// Whether it takes `$filter` (`{ updatedAt: { gt: WATERMARK } }`, or null for everything).
    pub incremental: bool,
    /// The document.
    pub text: &'static str,
}

/// The caller and its workspace: whose quota, and which workspace the rows belong to.
pub const VIEWER: Document = Document {
    name: "HeadroomViewer",
    entity: "viewer",
    incremental: false,
    text: "query HeadroomViewer { viewer { id } organization { id name urlKey } }",
};

/// Teams.
pub const TEAMS: Document = Document {
    name: "HeadroomTeams",
    entity: "teams",
    incremental: true,
    text: "query HeadroomTeams($first: Int!, $after: String, $filter: TeamFilter) {
  teams(first: $first, after: $after, orderBy: updatedAt, includeArchived: true, filter: $filter) {
    nodes { id key name createdAt updatedAt archivedAt }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Users of the workspace.
pub const USERS: Document = Document {
    name: "HeadroomUsers",
    entity: "users",
    incremental: true,
    text: "query HeadroomUsers($first: Int!, $after: String, $filter: UserFilter) {
  users(first: $first, after: $after, orderBy: updatedAt, includeDisabled: true, filter: $filter) {
    nodes { id name displayName email active createdAt updatedAt }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Team memberships: no `updatedAt` filter, so always the whole list.
pub const TEAM_MEMBERSHIPS: Document = Document {
    name: "HeadroomTeamMemberships",
    entity: "team_memberships",
    incremental: false,
    text: "query HeadroomTeamMemberships($first: Int!, $after: String) {
  teamMemberships(first: $first, after: $after, orderBy: updatedAt) {
    nodes { id owner createdAt updatedAt team { id } user { id } }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Workflow states of every team.
pub const WORKFLOW_STATES: Document = Document {
    name: "HeadroomWorkflowStates",
    entity: "workflow_states",
    incremental: true,
    text:
        "query HeadroomWorkflowStates($first: Int!, $after: String, $filter: WorkflowStateFilter) {
  workflowStates(first: $first, after: $after, orderBy: updatedAt, filter: $filter) {
    nodes { id name type position createdAt updatedAt team { id } }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Issue labels, the workspace's and every team's.
pub const LABELS: Document = Document {
    name: "HeadroomLabels",
    entity: "labels",
    incremental: true,
    text: "query HeadroomLabels($first: Int!, $after: String, $filter: IssueLabelFilter) {
  issueLabels(first: $first, after: $after, orderBy: updatedAt, filter: $filter) {
    nodes { id name color createdAt updatedAt team { id } }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Projects.
pub const PROJECTS: Document = Document {
    name: "HeadroomProjects",
    entity: "projects",
    incremental: true,
    text: "query HeadroomProjects($first: Int!, $after: String, $filter: ProjectFilter) {
  projects(first: $first, after: $after, orderBy: updatedAt, includeArchived: true, filter: $filter) {
    nodes {
      id name state targetDate startedAt completedAt canceledAt createdAt updatedAt
      lead { id }
    }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Cycles of every team.
pub const CYCLES: Document = Document {
    name: "HeadroomCycles",
    entity: "cycles",
    incremental: true,
    text: "query HeadroomCycles($first: Int!, $after: String, $filter: CycleFilter) {
  cycles(first: $first, after: $after, orderBy: updatedAt, includeArchived: true, filter: $filter) {
    nodes { id number name startsAt endsAt completedAt createdAt updatedAt team { id } }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Issues, with the ids of what they point at, their first labels and their first
/// [`NESTED_HISTORY`] history entries.
pub const ISSUES: Document = Document {
    name: "HeadroomIssues",
    entity: "issues",
    incremental: true,
    text: "query HeadroomIssues($first: Int!, $after: String, $filter: IssueFilter) {
  issues(first: $first, after: $after, orderBy: updatedAt, includeArchived: true, filter: $filter) {
    nodes {
      id identifier number title estimate priority dueDate
      createdAt updatedAt startedAt completedAt canceledAt archivedAt
      team { id } state { id } assignee { id } creator { id }
      project { id } cycle { id } parent { id }
      labels(first: 20) { nodes { id } }
      history(first: 10) {
        nodes {
          id createdAt updatedAt actorId
          fromStateId toStateId fromAssigneeId toAssigneeId
          fromEstimate toEstimate fromCycleId toCycleId fromProjectId toProjectId
        }
        pageInfo { hasNextPage endCursor }
      }
    }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// The history entries each issue of an [`ISSUES`] page carries (`history(first: 10)`): most
/// issues' whole history, so that only an issue with more sends [`ISSUE_HISTORY`] requests
/// of its own — Linear's 2,500 requests an hour run out long before its complexity points
/// when every issue costs a request. Ten entries add about 25 points per issue (some 1,300 to
/// a page of 50, which then costs about 3,000, well under the 10,000 per query).
pub const NESTED_HISTORY: u32 = 10;

/// Comments, across every issue.
pub const COMMENTS: Document = Document {
    name: "HeadroomComments",
    entity: "comments",
    incremental: true,
    text: "query HeadroomComments($first: Int!, $after: String, $filter: CommentFilter) {
  comments(first: $first, after: $after, orderBy: updatedAt, filter: $filter) {
    nodes { id body createdAt updatedAt issue { id } user { id } }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// Attachments, across every issue.
pub const ATTACHMENTS: Document = Document {
    name: "HeadroomAttachments",
    entity: "attachments",
    incremental: true,
    text: "query HeadroomAttachments($first: Int!, $after: String, $filter: AttachmentFilter) {
  attachments(first: $first, after: $after, orderBy: updatedAt, filter: $filter) {
    nodes { id title url sourceType createdAt updatedAt issue { id } }
    pageInfo { hasNextPage endCursor }
  }
}",
};

/// One issue's history: the only record of its state, assignee, estimate and cycle changes.
pub const ISSUE_HISTORY: Document = Document {
    name: "HeadroomIssueHistory",
    entity: "issue_history",
    incremental: false,
    text: "query HeadroomIssueHistory($issue: String!, $first: Int!, $after: String) {
  issue(id: $issue) {
    history(first: $first, after: $after) {
      nodes {
        id createdAt updatedAt actorId
        fromStateId toStateId fromAssigneeId toAssigneeId
        fromEstimate toEstimate fromCycleId toCycleId fromProjectId toProjectId
      }
      pageInfo { hasNextPage endCursor }
    }
  }
}",
};

/// Every document a workspace sync sends.
pub const ALL: &[Document] = &[
    VIEWER,
    TEAMS,
    USERS,
    TEAM_MEMBERSHIPS,
    WORKFLOW_STATES,
    LABELS,
    PROJECTS,
    CYCLES,
    ISSUES,
    COMMENTS,
    ATTACHMENTS,
    ISSUE_HISTORY,
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_document_is_named_as_its_operation_and_pages_as_it_says() {
        for d in ALL {
            assert!(d.text.contains(&format!("query {}", d.name)), "{}", d.name);
            assert_eq!(
                d.incremental,
                d.text.contains("filter: $filter"),
                "{}",
                d.name
            );
            if d.entity != "viewer" {
                assert!(
                    d.text.contains("pageInfo { hasNextPage endCursor }"),
                    "{}",
                    d.name
                );
                assert!(d.text.contains("after: $after"), "{}", d.name);
            }
        }
        assert!(
            ISSUES
                .text
                .contains(&format!("history(first: {NESTED_HISTORY})")),
            "the nested history's size is NESTED_HISTORY"
        );
        let mut names: Vec<&str> = ALL.iter().map(|d| d.name).collect();
        names.dedup();
        assert_eq!(names.len(), ALL.len());
    }
}
