//! Jira's REST objects to the store's typed rows, the object kept raw beside. Field names are
//! Jira's published ones (the platform and Jira Software descriptions). Ids come as strings of
//! digits and are stored as numbers; an object without its id is skipped, not stored half.
//! People are kept by `accountId`; e-mail addresses are never copied out of `raw`.
//!
//! Two issue fields are custom fields whose ids differ per site: the sprints (Jira Software's
//! `gh-sprint`) and the story-point estimate. The sync learns their ids from `GET /field` and
//! passes them in [`CustomFields`].

use headroom_store::Record;
use headroom_store::jira::{
    JiraBoard, JiraChangelog, JiraComment, JiraIssue, JiraIssueSprint, JiraProject, JiraSprint,
    JiraWorklog,
};
use jiff::Timestamp;
use serde_json::Value;

/// Where a row was read: the site (its host) and when.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The site's host.
    pub site: &'a str,
    /// When collected.
    pub now: Timestamp,
}

/// The site's ids of the custom fields a row reads (`customfield_10020`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustomFields {
    /// Jira Software's sprint field.
    pub sprint: Option<String>,
    /// The story-point estimate.
    pub story_points: Option<String>,
}

/// Jira Software's sprint field, as `GET /field` types it (`schema.custom`): Atlassian's
/// documented way to find it, names being mutable.
const SPRINT_SCHEMA: &str = "com.pyxis.greenhopper.jira:gh-sprint";

/// The names of the story-point estimate: Jira Software's numeric `Story Points` field
/// (company-managed projects) and Jira Cloud's `Story point estimate` (team-managed). Jira
/// documents it as "just a regular numeric field", so its name is how it is found; the first
/// name listed wins when a site has both.
const STORY_POINT_NAMES: [&str; 2] = ["Story Points", "Story point estimate"];

impl CustomFields {
    /// The site's fields as `GET /rest/api/3/field` lists them (`FieldDetails`): the sprint
    /// field by its schema, the story-point estimate by name among the numeric custom fields.
    pub fn from_field_list(list: &Value) -> Self {
        let fields = list.as_array().map(Vec::as_slice).unwrap_or_default();
        let custom = |f: &&Value| f.get("custom").and_then(Value::as_bool) == Some(true);
        let schema = |f: &Value, key: &str| {
            f.get("schema")
                .and_then(|s| s.get(key))
                .and_then(Value::as_str)
                .map(str::to_owned)
        };
        let sprint = fields
            .iter()
            .filter(custom)
            .find(|f| schema(f, "custom").as_deref() == Some(SPRINT_SCHEMA))
            .and_then(|f| text(f, "id"));
        let story_points = STORY_POINT_NAMES.iter().find_map(|name| {
            fields
                .iter()
                .filter(custom)
                .filter(|f| schema(f, "type").as_deref() == Some("number"))
                .find(|f| text(f, "name").is_some_and(|n| n.eq_ignore_ascii_case(name)))
                .and_then(|f| text(f, "id"))
        });
        CustomFields {
            sprint,
            story_points,
        }
    }
}

fn text(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).map(str::to_owned)
}

/// An id Jira sends as a string of digits (or, on agile objects, a number).
fn id(v: &Value, field: &str) -> Option<i64> {
    match v.get(field)? {
        Value::String(s) => s.parse().ok(),
        other => other.as_i64(),
    }
}

fn int(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

/// An instant as Jira writes it: ISO 8601 with an offset, which the platform API writes
/// without a colon (`2026-03-08T02:30:00.000-0300`).
pub fn instant(text: &str) -> Option<Timestamp> {
    if let Ok(t) = text.parse() {
        return Some(t);
    }
    let split = text.len().checked_sub(5)?;
    let (head, tail) = (text.get(..split)?, text.get(split..)?);
    let sign = tail.chars().next()?;
    if (sign == '+' || sign == '-') && tail[1..].chars().all(|c| c.is_ascii_digit()) {
        return format!("{head}{}:{}", &tail[..3], &tail[3..]).parse().ok();
    }
    None
}

fn at(v: &Value, field: &str) -> Option<Timestamp> {
    v.get(field).and_then(Value::as_str).and_then(instant)
}

/// The `accountId` of the person under `field`.
fn account(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(|p| text(p, "accountId"))
}

/// The `name` of the object under `field` (`status`, `priority`).
fn name_of(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(|o| text(o, "name"))
}

/// A project of `GET /rest/api/3/project/search`.
pub fn project(v: &Value, o: Origin<'_>) -> Option<Record> {
    Some(Record::from(JiraProject {
        site: o.site.to_owned(),
        id: id(v, "id")?,
        key: text(v, "key")?,
        name: text(v, "name"),
        project_type: text(v, "projectTypeKey"),
        lead_account_id: account(v, "lead"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// An issue of `search/jql` (asked with its fields), and its sprint memberships.
pub fn issue(v: &Value, custom: &CustomFields, o: Origin<'_>) -> Vec<Record> {
    let (Some(issue_id), Some(key)) = (id(v, "id"), text(v, "key")) else {
        return Vec::new();
    };
    let f = v.get("fields").unwrap_or(&Value::Null);
    let custom_field = |name: &Option<String>| name.as_deref().and_then(|n| f.get(n));
    let labels = f
        .get("labels")
        .and_then(Value::as_array)
        .map(|l| {
            l.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default();
    let mut rows = vec![Record::from(JiraIssue {
        site: o.site.to_owned(),
        id: issue_id,
        key,
        project_id: f.get("project").and_then(|p| id(p, "id")),
        summary: text(f, "summary"),
        issue_type: name_of(f, "issuetype"),
        status: name_of(f, "status"),
        status_category: f
            .get("status")
            .and_then(|s| s.get("statusCategory"))
            .and_then(|c| text(c, "key")),
        priority: name_of(f, "priority"),
        assignee_account_id: account(f, "assignee"),
        reporter_account_id: account(f, "reporter"),
        parent_id: f.get("parent").and_then(|p| id(p, "id")),
        labels,
        story_points: custom_field(&custom.story_points).and_then(Value::as_f64),
        original_estimate_seconds: int(f, "timeoriginalestimate"),
        time_spent_seconds: int(f, "timespent"),
        due_date: text(f, "duedate"),
        created_at: at(f, "created"),
        updated_at: at(f, "updated"),
        resolved_at: at(f, "resolutiondate"),
        raw: v.clone(),
        collected_at: o.now,
    })];
    let sprints = custom_field(&custom.sprint).and_then(Value::as_array);
    for sprint in sprints.into_iter().flatten() {
        if let Some(sprint_id) = id(sprint, "id") {
            rows.push(Record::from(JiraIssueSprint {
                site: o.site.to_owned(),
                issue_id,
                sprint_id,
                raw: sprint.clone(),
                collected_at: o.now,
            }));
        }
    }
    rows
}

/// An entry of an issue's changelog (`issue/{key}/changelog` values, or a bulk fetch's
/// `changeHistories`).
pub fn changelog(v: &Value, issue_id: i64, o: Origin<'_>) -> Option<Record> {
    Some(Record::from(JiraChangelog {
        site: o.site.to_owned(),
        id: id(v, "id")?,
        issue_id,
        author_account_id: account(v, "author"),
        created_at: at(v, "created"),
        items: v.get("items").cloned().unwrap_or(Value::Array(Vec::new())),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// A comment of `issue/{key}/comment`.
pub fn comment(v: &Value, issue_id: i64, o: Origin<'_>) -> Option<Record> {
    Some(Record::from(JiraComment {
        site: o.site.to_owned(),
        id: id(v, "id")?,
        issue_id,
        author_account_id: account(v, "author"),
        body: v.get("body").cloned(),
        created_at: at(v, "created"),
        updated_at: at(v, "updated"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// A worklog of `issue/{key}/worklog`.
pub fn worklog(v: &Value, issue_id: i64, o: Origin<'_>) -> Option<Record> {
    Some(Record::from(JiraWorklog {
        site: o.site.to_owned(),
        id: id(v, "id")?,
        issue_id,
        author_account_id: account(v, "author"),
        started_at: at(v, "started"),
        time_spent_seconds: int(v, "timeSpentSeconds"),
        created_at: at(v, "created"),
        updated_at: at(v, "updated"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// A board of `GET /rest/agile/1.0/board`.
pub fn board(v: &Value, o: Origin<'_>) -> Option<Record> {
    Some(Record::from(JiraBoard {
        site: o.site.to_owned(),
        id: id(v, "id")?,
        name: text(v, "name"),
        board_type: text(v, "type"),
        project_id: v.get("location").and_then(|l| id(l, "projectId")),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

/// A sprint of `GET /rest/agile/1.0/board/{id}/sprint`.
pub fn sprint(v: &Value, o: Origin<'_>) -> Option<Record> {
    Some(Record::from(JiraSprint {
        site: o.site.to_owned(),
        id: id(v, "id")?,
        board_id: id(v, "originBoardId"),
        name: text(v, "name"),
        state: text(v, "state"),
        goal: text(v, "goal"),
        start_at: at(v, "startDate"),
        end_at: at(v, "endDate"),
        complete_at: at(v, "completeDate"),
        raw: v.clone(),
        collected_at: o.now,
    }))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn origin() -> Origin<'static> {
        Origin {
            site: "acme.atlassian.net",
            now: "2026-12-07T03:00:00Z".parse().expect("an instant"),
        }
    }

    fn fields() -> CustomFields {
        CustomFields {
            sprint: Some("customfield_10020".into()),
            story_points: Some("customfield_10016".into()),
        }
    }

    #[test]
    fn jiras_offsets_without_a_colon_are_read() {
        let want: Timestamp = "2026-03-08T05:30:00Z".parse().expect("an instant");
        assert_eq!(instant("2026-03-08T02:30:00.000-0300"), Some(want));
        assert_eq!(instant("2026-03-08T11:00:00.000+0530"), Some(want));
        assert_eq!(instant("2026-03-08T05:30:00.000Z"), Some(want));
        assert_eq!(instant("2026-03-08T02:30:00-03:00"), Some(want));
        assert_eq!(instant("yesterday"), None);
        assert_eq!(instant(""), None);
    }

    #[test]
    fn an_issue_keeps_its_status_people_estimates_and_sprints() {
        let v = json!({
            "id": "10042", "key": "ENG-42",
            "fields": {
                "summary": "Faster sync", "labels": ["api", "ux"],
                "issuetype": {"name": "Story"}, "priority": {"name": "High"},
                "status": {"name": "In Progress", "statusCategory": {"key": "indeterminate"}},
                "assignee": {"accountId": "5b10-ann", "emailAddress": "ann@example.com"},
                "reporter": {"accountId": "5b10-ben"}, "project": {"id": "10000", "key": "ENG"},
                "parent": {"id": "10040", "key": "ENG-40"},
                "timeoriginalestimate": 28800, "timespent": 3600, "duedate": "2026-12-24",
                "created": "2026-11-01T10:00:00.000-0300",
                "updated": "2026-12-01T10:00:00.000-0300", "resolutiondate": null,
                "customfield_10016": 5.0,
                "customfield_10020": [{"id": 7, "name": "Sprint 7", "state": "active", "boardId": 3}]
            }
        });
        let rows = issue(&v, &fields(), origin());
        assert_eq!(rows.len(), 2, "the issue and its one sprint membership");
        let issue = serde_json::to_value(&rows[0]).expect("serializable");
        let back: Record = serde_json::from_value(issue.clone()).expect("reads back");
        assert_eq!(back, rows[0]);
        assert_eq!(issue["table"], "jira");
        let issue = &issue["Issue"];
        assert_eq!(issue["id"], 10042);
        assert_eq!(issue["project_id"], 10000);
        assert_eq!(issue["status_category"], "indeterminate");
        assert_eq!(issue["assignee_account_id"], "5b10-ann");
        assert_eq!(issue["story_points"], 5.0);
        assert_eq!(issue["labels"], json!(["api", "ux"]));
        assert_eq!(issue["updated_at"], "2026-12-01T13:00:00Z");
        let mut typed = issue.clone();
        typed["raw"] = Value::Null;
        assert!(!typed.to_string().contains("ann@example.com"), "{typed}");
        let member = serde_json::to_value(&rows[1]).expect("serializable");
        assert_eq!(member["IssueSprint"]["sprint_id"], 7);
        // Without the site's field ids, the estimate and sprints are not guessed.
        let plain = issue_rows(&v, &CustomFields::default());
        assert_eq!(plain, 1);
    }

    fn issue_rows(v: &Value, custom: &CustomFields) -> usize {
        issue(v, custom, origin()).len()
    }

    #[test]
    fn an_object_without_its_id_is_skipped_not_stored_half() {
        assert!(issue(&json!({"key": "ENG-1", "fields": {}}), &fields(), origin()).is_empty());
        assert!(changelog(&json!({"items": []}), 1, origin()).is_none());
        assert!(
            project(&json!({"id": "10000"}), origin()).is_none(),
            "a project needs its key"
        );
        let entry = json!({"id": "100", "author": {"accountId": "a"}, "created": "2026-12-01T10:00:00.000+0000",
                           "items": [{"field": "status", "fromString": "To Do", "toString": "Done"}]});
        assert!(changelog(&entry, 10042, origin()).is_some());
        let sprint_v = json!({"id": 7, "state": "closed", "originBoardId": 3,
                              "startDate": "2026-11-01T09:00:00.000Z"});
        assert!(sprint(&sprint_v, origin()).is_some());
        assert!(
            board(
                &json!({"id": 3, "type": "scrum", "location": {"projectId": 10000}}),
                origin()
            )
            .is_some()
        );
        assert!(comment(&json!({"id": "5"}), 1, origin()).is_some());
        assert!(worklog(&json!({"id": "6", "timeSpentSeconds": 60}), 1, origin()).is_some());
    }

    #[test]
    fn the_sites_sprint_and_story_point_fields_are_found_by_schema_and_name() {
        let float = "com.atlassian.jira.plugin.system.customfieldtypes:float";
        let list = json!([
            {"id": "summary", "name": "Summary", "custom": false, "schema": {"type": "string", "system": "summary"}},
            // A field named Sprint that is not Jira Software's: not taken for it.
            {"id": "customfield_10001", "name": "Sprint", "custom": true, "schema": {"type": "string"}},
            {"id": "customfield_10111", "name": "Iteration", "custom": true,
             "schema": {"type": "array", "items": "json", "custom": "com.pyxis.greenhopper.jira:gh-sprint"}},
            {"id": "customfield_10030", "name": "Story point estimate", "custom": true,
             "schema": {"type": "number", "custom": "com.pyxis.greenhopper.jira:jsw-story-points"}},
            {"id": "customfield_10099", "name": "Business Value", "custom": true, "schema": {"type": "number", "custom": float}},
            {"id": "customfield_10222", "name": "story points", "custom": true, "schema": {"type": "number", "custom": float}},
            {"id": "customfield_10223", "name": "Story Points", "custom": true, "schema": {"type": "string"}},
        ]);
        let found = CustomFields::from_field_list(&list);
        assert_eq!(found.sprint.as_deref(), Some("customfield_10111"));
        assert_eq!(found.story_points.as_deref(), Some("customfield_10222"));
        let team = json!([list[3].clone()]);
        let found = CustomFields::from_field_list(&team);
        assert_eq!(found.story_points.as_deref(), Some("customfield_10030"));
        assert_eq!(
            found.sprint, None,
            "a site without Jira Software has no sprint field"
        );
        assert_eq!(
            CustomFields::from_field_list(&json!({"oops": 1})),
            CustomFields::default()
        );
    }

    proptest! {
        /// Whatever text Jira sends as an instant, it is read or refused: never a panic.
        #[test]
        fn any_text_is_read_or_refused_as_an_instant(text in ".{0,40}") {
            let _ = instant(&text);
        }
    }
}
