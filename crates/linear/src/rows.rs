//! Linear's GraphQL nodes, as [`crate::documents`] selects them, to the store's typed rows, the
//! node kept raw beside. A row needs its `id` (and an issue's history entry, its issue); a node
//! without one is skipped, not stored half. Related objects are kept by id (`team { id }`).

use headroom_store::Record;
use headroom_store::linear::{
    LinearAttachment, LinearComment, LinearCycle, LinearIssue, LinearIssueHistory, LinearLabel,
    LinearProject, LinearTeam, LinearTeamMembership, LinearUser, LinearWorkflowState,
};
use jiff::Timestamp;
use serde_json::Value;

/// Where a row was read: the workspace (the organization's id) and when.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The organization's id.
    pub workspace: &'a str,
    /// When collected.
    pub now: Timestamp,
}

fn text(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).map(str::to_owned)
}

fn int(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

fn float(v: &Value, field: &str) -> Option<f64> {
    v.get(field).and_then(Value::as_f64)
}

fn boolean(v: &Value, field: &str) -> Option<bool> {
    v.get(field).and_then(Value::as_bool)
}

fn at(v: &Value, field: &str) -> Option<Timestamp> {
    v.get(field)
        .and_then(Value::as_str)
        .and_then(|s| s.parse().ok())
}

/// The `id` of the object under `field` (`team { id }`).
fn id_of(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(|o| text(o, "id"))
}

/// The ids of a nested connection's nodes (`labels { nodes { id } }`), in order.
fn node_ids(v: &Value, field: &str) -> Vec<String> {
    v.get(field)
        .and_then(|c| c.get("nodes"))
        .and_then(Value::as_array)
        .map(|nodes| nodes.iter().filter_map(|n| text(n, "id")).collect())
        .unwrap_or_default()
}

/// The row of a node of `entity` (a [`crate::documents::Document::entity`]); `issue` names the
/// issue an `issue_history` page belongs to.
pub fn row(entity: &str, v: &Value, issue: Option<&str>, o: Origin<'_>) -> Option<Record> {
    let id = text(v, "id")?;
    Some(match entity {
        "teams" => team(v, id, o),
        "users" => user(v, id, o),
        "team_memberships" => team_membership(v, id, o),
        "workflow_states" => workflow_state(v, id, o),
        "labels" => label(v, id, o),
        "projects" => project(v, id, o),
        "cycles" => cycle(v, id, o),
        "issues" => work_item(v, id, o),
        "comments" => comment(v, id, o),
        "attachments" => attachment(v, id, o),
        "issue_history" => history_entry(v, id, issue?, o),
        _ => return None,
    })
}

fn team(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearTeam {
        workspace: o.workspace.to_owned(),
        id,
        key: text(v, "key"),
        name: text(v, "name"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        archived_at: at(v, "archivedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn user(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearUser {
        workspace: o.workspace.to_owned(),
        id,
        name: text(v, "name"),
        display_name: text(v, "displayName"),
        email: text(v, "email"),
        active: boolean(v, "active"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn team_membership(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearTeamMembership {
        workspace: o.workspace.to_owned(),
        id,
        team_id: id_of(v, "team"),
        user_id: id_of(v, "user"),
        owner: boolean(v, "owner"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn workflow_state(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearWorkflowState {
        workspace: o.workspace.to_owned(),
        id,
        team_id: id_of(v, "team"),
        name: text(v, "name"),
        state_type: text(v, "type"),
        position: float(v, "position"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn label(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearLabel {
        workspace: o.workspace.to_owned(),
        id,
        team_id: id_of(v, "team"),
        name: text(v, "name"),
        color: text(v, "color"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn project(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearProject {
        workspace: o.workspace.to_owned(),
        id,
        name: text(v, "name"),
        state: text(v, "state"),
        lead_id: id_of(v, "lead"),
        target_date: text(v, "targetDate"),
        started_at: at(v, "startedAt"),
        completed_at: at(v, "completedAt"),
        canceled_at: at(v, "canceledAt"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn cycle(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearCycle {
        workspace: o.workspace.to_owned(),
        id,
        team_id: id_of(v, "team"),
        number: int(v, "number").or_else(|| float(v, "number").map(|n| n as i64)),
        name: text(v, "name"),
        starts_at: at(v, "startsAt"),
        ends_at: at(v, "endsAt"),
        completed_at: at(v, "completedAt"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn work_item(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearIssue {
        workspace: o.workspace.to_owned(),
        id,
        identifier: text(v, "identifier"),
        team_id: id_of(v, "team"),
        number: int(v, "number").or_else(|| float(v, "number").map(|n| n as i64)),
        title: text(v, "title"),
        state_id: id_of(v, "state"),
        assignee_id: id_of(v, "assignee"),
        creator_id: id_of(v, "creator"),
        project_id: id_of(v, "project"),
        cycle_id: id_of(v, "cycle"),
        parent_id: id_of(v, "parent"),
        estimate: float(v, "estimate"),
        priority: int(v, "priority").or_else(|| float(v, "priority").map(|n| n as i64)),
        label_ids: node_ids(v, "labels"),
        due_date: text(v, "dueDate"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        started_at: at(v, "startedAt"),
        completed_at: at(v, "completedAt"),
        canceled_at: at(v, "canceledAt"),
        archived_at: at(v, "archivedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn comment(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearComment {
        workspace: o.workspace.to_owned(),
        id,
        issue_id: id_of(v, "issue"),
        user_id: id_of(v, "user"),
        body: text(v, "body"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn attachment(v: &Value, id: String, o: Origin<'_>) -> Record {
    Record::from(LinearAttachment {
        workspace: o.workspace.to_owned(),
        id,
        issue_id: id_of(v, "issue"),
        title: text(v, "title"),
        url: text(v, "url"),
        source_type: text(v, "sourceType"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

fn history_entry(v: &Value, id: String, issue: &str, o: Origin<'_>) -> Record {
    Record::from(LinearIssueHistory {
        workspace: o.workspace.to_owned(),
        id,
        issue_id: Some(issue.to_owned()),
        actor_id: text(v, "actorId"),
        from_state_id: text(v, "fromStateId"),
        to_state_id: text(v, "toStateId"),
        from_assignee_id: text(v, "fromAssigneeId"),
        to_assignee_id: text(v, "toAssigneeId"),
        from_estimate: float(v, "fromEstimate"),
        to_estimate: float(v, "toEstimate"),
        from_cycle_id: text(v, "fromCycleId"),
        to_cycle_id: text(v, "toCycleId"),
        from_project_id: text(v, "fromProjectId"),
        to_project_id: text(v, "toProjectId"),
        created_at: at(v, "createdAt"),
        updated_at: at(v, "updatedAt"),
        raw: v.clone(),
        collected_at: o.now,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::documents;

    fn origin() -> Origin<'static> {
        Origin {
            workspace: "org-1",
            now: "2026-12-07T03:00:00Z".parse().expect("an instant"),
        }
    }

    /// A node as the issues document selects it.
    fn issue() -> Value {
        json!({
            "id": "i-1", "identifier": "ENG-12", "number": 12, "title": "Faster sync",
            "estimate": 2.5, "priority": 2, "dueDate": "2026-12-24",
            "createdAt": "2026-11-01T10:00:00.000Z", "updatedAt": "2026-12-01T10:00:00.000Z",
            "startedAt": "2026-11-02T09:00:00.000Z", "completedAt": null,
            "canceledAt": null, "archivedAt": null,
            "team": {"id": "t-1"}, "state": {"id": "s-2"}, "assignee": {"id": "u-1"},
            "creator": {"id": "u-2"}, "project": null, "cycle": {"id": "c-3"}, "parent": null,
            "labels": {"nodes": [{"id": "l-2"}, {"id": "l-1"}]}
        })
    }

    #[test]
    fn an_issue_keeps_its_estimate_state_cycle_labels_and_instants() {
        let Some(Record::Linear(row)) = row("issues", &issue(), None, origin()) else {
            panic!("an issue row");
        };
        let v = serde_json::to_value(&row).expect("serializable");
        let issue = &v["Issue"];
        assert_eq!(issue["workspace"], "org-1");
        assert_eq!(issue["identifier"], "ENG-12");
        assert_eq!(issue["estimate"], 2.5);
        assert_eq!(issue["state_id"], "s-2");
        assert_eq!(issue["cycle_id"], "c-3");
        assert_eq!(issue["project_id"], Value::Null);
        assert_eq!(issue["label_ids"], json!(["l-2", "l-1"]));
        assert_eq!(issue["started_at"], "2026-11-02T09:00:00Z");
        assert_eq!(issue["raw"]["title"], "Faster sync");
    }

    #[test]
    fn a_node_without_its_identity_is_skipped_not_stored_half() {
        let mut no_id = issue();
        no_id["id"] = Value::Null;
        assert!(row("issues", &no_id, None, origin()).is_none());
        let entry = json!({"id": "h-1", "createdAt": "2026-12-01T10:00:00.000Z"});
        assert!(row("issue_history", &entry, None, origin()).is_none());
        assert!(row("issue_history", &entry, Some("i-1"), origin()).is_some());
        assert!(row("no_such_entity", &issue(), None, origin()).is_none());
    }

    #[test]
    fn every_entity_a_document_pages_has_a_row() {
        let node = json!({"id": "x"});
        for d in documents::ALL.iter().filter(|d| d.entity != "viewer") {
            assert!(
                row(d.entity, &node, Some("i-1"), origin()).is_some(),
                "{}",
                d.entity
            );
        }
    }
}
