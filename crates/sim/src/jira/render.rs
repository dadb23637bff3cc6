//! The site's objects as Jira's REST v3 and agile 1.0 write them: timestamps with an offset
//! in the site's zone (`2026-03-08T02:30:00.000-0300`), users, projects, issue fields
//! (the sprint field as Jira Software exposes it) and Atlassian Document Format bodies.

use headroom_core::clock::Timestamp;
use jiff::tz::TimeZone;
use serde_json::{Map, Value, json};

use super::model::{Comment, History, Issue, Project, Site, Sprint, User, Worklog};

/// Statuses: name, id, status category key.
pub(crate) const STATUSES: [(&str, &str, &str); 3] = [
    ("To Do", "10000", "new"),
    ("In Progress", "3", "indeterminate"),
    ("Done", "10001", "done"),
];
pub(crate) const ISSUE_TYPES: [(&str, &str); 3] =
    [("Task", "10001"), ("Bug", "10002"), ("Story", "10003")];
pub(crate) const PRIORITIES: [(&str, &str); 5] = [
    ("Highest", "1"),
    ("High", "2"),
    ("Medium", "3"),
    ("Low", "4"),
    ("Lowest", "5"),
];
/// The system fields a search may return, in the order `*all` lists them; the site's
/// sprint and story-point fields follow, then `comment` ([`fields`]).
const SYSTEM_FIELDS: [&str; 11] = [
    "summary",
    "status",
    "issuetype",
    "priority",
    "assignee",
    "reporter",
    "created",
    "updated",
    "resolutiondate",
    "labels",
    "project",
];

/// Every field a search of `site` may return, in the order `*all` lists them.
pub(crate) fn fields(site: &Site) -> Vec<&str> {
    let mut out: Vec<&str> = SYSTEM_FIELDS.to_vec();
    out.push(&site.spec.sprint_field);
    out.push(&site.spec.story_points_field);
    out.push("comment");
    out
}

pub(crate) fn status_id(i: usize) -> String {
    STATUSES[i].1.to_owned()
}

/// Jira's timestamp: milliseconds and a `±hhmm` offset, in the site's zone.
pub(crate) fn jira_ts(t: Timestamp, tz: &TimeZone) -> String {
    t.to_zoned_datetime(tz.clone())
        .strftime("%Y-%m-%dT%H:%M:%S%.3f%z")
        .to_string()
}

/// The agile API's timestamp: milliseconds and a `±hh:mm` offset.
pub(crate) fn agile_ts(t: Timestamp, tz: &TimeZone) -> String {
    t.to_zoned_datetime(tz.clone())
        .strftime("%Y-%m-%dT%H:%M:%S%.3f%:z")
        .to_string()
}

fn avatars(base: &str, owner: &str) -> Value {
    let url = |size: u32| format!("{base}/secure/useravatar?size={size}&ownerId={owner}");
    json!({"48x48": url(48), "24x24": url(24), "16x16": url(16), "32x32": url(32)})
}

/// A user as issue fields, comments and changelogs embed one (`UserDetails`).
pub(crate) fn user_details(base: &str, site: &Site, u: &User) -> Value {
    json!({
        "self": format!("{base}/rest/api/3/user?accountId={}", u.account_id),
        "accountId": u.account_id,
        "emailAddress": u.email(),
        "avatarUrls": avatars(base, &u.account_id),
        "displayName": u.display_name,
        "active": true,
        "timeZone": site.spec.time_zone,
        "accountType": "atlassian",
    })
}

/// `GET /myself`'s user (`User`).
pub(crate) fn myself(base: &str, site: &Site, u: &User) -> Value {
    let mut v = user_details(base, site, u);
    if let Value::Object(m) = &mut v {
        m.insert("locale".into(), json!("en_US"));
    }
    v
}

/// A project as project search lists it.
pub(crate) fn project(base: &str, p: &Project) -> Value {
    json!({
        "expand": "description,lead,issueTypes,url,projectKeys,permissions,insight",
        "self": format!("{base}/rest/api/3/project/{}", p.id),
        "id": p.id.to_string(),
        "key": p.key,
        "name": p.name,
        "avatarUrls": avatars(base, &p.key),
        "projectTypeKey": "software",
        "simplified": false,
        "style": "classic",
        "isPrivate": false,
        "properties": {},
    })
}

/// A project as an issue's `project` field embeds it.
fn project_field(base: &str, p: &Project) -> Value {
    json!({
        "self": format!("{base}/rest/api/3/project/{}", p.id),
        "id": p.id.to_string(),
        "key": p.key,
        "name": p.name,
        "projectTypeKey": "software",
        "simplified": false,
        "avatarUrls": avatars(base, &p.key),
    })
}

fn status(base: &str, i: usize) -> Value {
    let (name, id, category) = STATUSES[i];
    let (cat_id, color, cat_name) = match category {
        "new" => (2, "blue-gray", "To Do"),
        "indeterminate" => (4, "yellow", "In Progress"),
        _ => (3, "green", "Done"),
    };
    json!({
        "self": format!("{base}/rest/api/3/status/{id}"),
        "description": "",
        "iconUrl": format!("{base}/images/icons/statuses/generic.png"),
        "name": name,
        "id": id,
        "statusCategory": {
            "self": format!("{base}/rest/api/3/statuscategory/{cat_id}"),
            "id": cat_id,
            "key": category,
            "colorName": color,
            "name": cat_name,
        },
    })
}

/// A sprint as the sprint field holds it (and, with `self`, as the agile API lists it).
pub(crate) fn sprint(site: &Site, s: &Sprint, base: Option<&str>) -> Value {
    let tz = &site.tz;
    let mut m = Map::new();
    m.insert("id".into(), json!(s.id));
    if let Some(base) = base {
        m.insert(
            "self".into(),
            json!(format!("{base}/rest/agile/1.0/sprint/{}", s.id)),
        );
    }
    m.insert("state".into(), json!(s.state));
    m.insert("name".into(), json!(s.name));
    let times = [
        ("startDate", s.start),
        ("endDate", s.end),
        ("completeDate", s.complete),
        ("createdDate", Some(s.created)),
    ];
    for (name, t) in times {
        if let Some(t) = t {
            m.insert(name.into(), json!(agile_ts(t, tz)));
        }
    }
    if base.is_some() {
        m.insert("originBoardId".into(), json!(site.boards[s.board].id));
    } else {
        m.insert("boardId".into(), json!(site.boards[s.board].id));
    }
    m.insert("goal".into(), json!(""));
    Value::Object(m)
}

/// Text as an Atlassian Document Format document.
pub(crate) fn adf(text: &str) -> Value {
    json!({
        "type": "doc",
        "version": 1,
        "content": [{"type": "paragraph", "content": [{"type": "text", "text": text}]}],
    })
}

/// One entry of `GET /field` (`FieldDetails`).
fn field_details(id: &str, name: &str, schema: Value, custom: bool) -> Value {
    let mut clauses = vec![json!(id)];
    if custom {
        let number = id.trim_start_matches("customfield_");
        clauses = vec![json!(format!("cf[{number}]")), json!(name)];
    }
    json!({
        "id": id, "key": id, "name": name, "custom": custom, "orderable": true,
        "navigable": true, "searchable": true, "clauseNames": clauses, "schema": schema,
    })
}

/// `GET /field`: the system fields a search returns, and the custom fields of the site: Jira
/// Software's sprint field (`gh-sprint`), the numeric `Story Points`, and one more custom
/// field a collector must not take for either.
pub(crate) fn field_list(site: &Site) -> Value {
    let system = |id: &str, name: &str, kind: &str| {
        field_details(id, name, json!({"type": kind, "system": id}), false)
    };
    let custom = |id: &str, name: &str, schema: Value| field_details(id, name, schema, true);
    let number = |id: &str| {
        id.trim_start_matches("customfield_")
            .parse::<i64>()
            .unwrap_or(0)
    };
    let (sprint, points) = (&site.spec.sprint_field, &site.spec.story_points_field);
    let mut list = vec![
        system("summary", "Summary", "string"),
        system("status", "Status", "status"),
        system("issuetype", "Issue Type", "issuetype"),
        system("priority", "Priority", "priority"),
        system("assignee", "Assignee", "user"),
        system("reporter", "Reporter", "user"),
        system("created", "Created", "datetime"),
        system("updated", "Updated", "datetime"),
        system("resolutiondate", "Resolved", "datetime"),
        system("labels", "Labels", "array"),
        system("project", "Project", "project"),
        system("comment", "Comment", "comments-page"),
        custom(
            sprint,
            "Sprint",
            json!({"type": "array", "items": "json",
            "custom": "com.pyxis.greenhopper.jira:gh-sprint", "customId": number(sprint)}),
        ),
        custom(
            points,
            "Story Points",
            json!({"type": "number",
            "custom": "com.atlassian.jira.plugin.system.customfieldtypes:float",
            "customId": number(points)}),
        ),
    ];
    // A numeric custom field that is neither: found by neither schema nor name.
    let other = "customfield_10099";
    if other != sprint && other != points {
        list.push(custom(
            other,
            "Business Value",
            json!({"type": "number",
            "custom": "com.atlassian.jira.plugin.system.customfieldtypes:float",
            "customId": 10099}),
        ));
    }
    Value::Array(list)
}

/// One field of an issue (`None`: not a field this site has).
pub(crate) fn field(base: &str, site: &Site, issue: &Issue, name: &str) -> Option<Value> {
    let tz = &site.tz;
    let user =
        |u: Option<usize>| u.map_or(Value::Null, |u| user_details(base, site, &site.users[u]));
    let v = match name {
        "summary" => json!(issue.summary),
        "status" => status(base, issue.status),
        "issuetype" => {
            let (name, id) = ISSUE_TYPES[issue.issuetype];
            json!({"self": format!("{base}/rest/api/3/issuetype/{id}"), "id": id,
                "description": "", "iconUrl": format!("{base}/images/icons/issuetypes/{id}.svg"),
                "name": name, "subtask": false, "hierarchyLevel": 0})
        }
        "priority" => {
            let (name, id) = PRIORITIES[issue.priority];
            json!({"self": format!("{base}/rest/api/3/priority/{id}"),
                "iconUrl": format!("{base}/images/icons/priorities/{id}.svg"), "name": name, "id": id})
        }
        "assignee" => user(issue.assignee),
        "reporter" => user(Some(issue.reporter)),
        "created" => json!(jira_ts(issue.created, tz)),
        "updated" => json!(jira_ts(issue.updated, tz)),
        "resolutiondate" => issue
            .resolved
            .map_or(Value::Null, |t| json!(jira_ts(t, tz))),
        "labels" => json!(issue.labels),
        "project" => project_field(base, &site.projects[issue.project]),
        n if n == site.spec.sprint_field => issue.sprint.map_or(Value::Null, |s| {
            json!([sprint(site, &site.sprints[s], None)])
        }),
        n if n == site.spec.story_points_field => {
            issue.story_points.map_or(Value::Null, |p| json!(p))
        }
        "comment" => {
            let list: Vec<Value> = issue
                .comments
                .iter()
                .map(|c| comment(base, site, issue, c))
                .collect();
            json!({"comments": list, "maxResults": list.len(), "total": list.len(), "startAt": 0})
        }
        _ => return None,
    };
    Some(v)
}

pub(crate) fn comment(base: &str, site: &Site, issue: &Issue, c: &Comment) -> Value {
    let author = user_details(base, site, &site.users[c.author]);
    json!({
        "self": format!("{base}/rest/api/3/issue/{}/comment/{}", issue.id, c.id),
        "id": c.id.to_string(),
        "author": author,
        "body": adf(&c.text),
        "updateAuthor": author,
        "created": jira_ts(c.created, &site.tz),
        "updated": jira_ts(c.updated, &site.tz),
        "jsdPublic": true,
    })
}

pub(crate) fn history(base: &str, site: &Site, h: &History) -> Value {
    let items: Vec<Value> = h
        .items
        .iter()
        .map(|c| {
            let mut m = Map::new();
            m.insert("field".into(), json!(c.field));
            m.insert("fieldtype".into(), json!("jira"));
            m.insert("fieldId".into(), json!(c.field_id));
            // Absent values are null in Jira's answers; the description types them as
            // strings, so an absent value is left out rather than sent as null.
            for (k, v) in [
                ("from", &c.from),
                ("fromString", &c.from_string),
                ("to", &c.to),
                ("toString", &c.to_string),
            ] {
                if let Some(v) = v {
                    m.insert(k.into(), json!(v));
                }
            }
            Value::Object(m)
        })
        .collect();
    json!({
        "id": h.id.to_string(),
        "author": user_details(base, site, &site.users[h.author]),
        "created": jira_ts(h.created, &site.tz),
        "items": items,
    })
}

pub(crate) fn worklog(base: &str, site: &Site, issue: &Issue, w: &Worklog) -> Value {
    let author = user_details(base, site, &site.users[w.author]);
    let (h, m) = (w.seconds / 3_600, (w.seconds % 3_600) / 60);
    let spent = match (h, m) {
        (0, m) => format!("{m}m"),
        (h, 0) => format!("{h}h"),
        (h, m) => format!("{h}h {m}m"),
    };
    json!({
        "self": format!("{base}/rest/api/3/issue/{}/worklog/{}", issue.id, w.id),
        "author": author,
        "updateAuthor": author,
        "comment": adf("Worked on it."),
        "created": jira_ts(w.created, &site.tz),
        "updated": jira_ts(w.created, &site.tz),
        "started": jira_ts(w.started, &site.tz),
        "timeSpent": spent,
        "timeSpentSeconds": w.seconds,
        "id": w.id.to_string(),
        "issueId": issue.id.to_string(),
    })
}
