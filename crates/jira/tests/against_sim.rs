//! What a site sync will ask, against the simulated Jira Cloud site (whose every answer
//! validates against Atlassian's published descriptions): the JQL `jql::issues` writes is
//! accepted, a watermark written in the user's zone selects exactly the issues changed since,
//! and every object the site answers maps to a row with its identity and the fields a
//! delivery-metrics query reads.

#![allow(clippy::expect_used)]

use base64::Engine as _;
use bytes::Bytes;
use headroom_core::clock::{Clock as _, Timestamp, TokioClock};
use headroom_jira::jql;
use headroom_jira::rows::{self, CustomFields, Origin};
use headroom_sim::{JiraSiteSpec, SimConfig, Simulator, TokenSpec};
use headroom_store::Record;
use jiff::tz::TimeZone;
use serde_json::{Value, json};

const ZONE: &str = "America/New_York";

/// Jira Cloud's usual id of Jira Software's sprint field (a sync learns it from `GET /field`).
const SPRINT_FIELD: &str = "customfield_10020";

struct Site {
    sim: Simulator,
    clock: TokioClock,
}

impl Site {
    fn new() -> Self {
        let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
        let config = SimConfig::default()
            .with_token(TokenSpec::user("t1", "alice"))
            .with_jira_site(
                JiraSiteSpec::new("acme")
                    .with_size(2, 12)
                    .with_children(2, 2, 1)
                    .with_boards(2, 3)
                    .with_time_zone(ZONE),
            );
        let sim = Simulator::new(config, clock).expect("a simulator");
        Site { sim, clock }
    }

    async fn call(&self, method: &str, path: &str, body: Option<&Value>) -> Value {
        let basic = base64::engine::general_purpose::STANDARD.encode("alice@example.com:t1");
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("authorization", format!("Basic {basic}"))
            .header("content-type", "application/json")
            .body(body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string())))
            .expect("a request");
        let response = self.sim.handle(request, [127, 0, 0, 1].into()).await;
        let status = response.status();
        let json: Value = serde_json::from_slice(response.body()).expect("a JSON answer");
        assert!(status.is_success(), "{method} {path}: {status} {json}");
        json
    }

    fn origin(&self) -> Origin<'static> {
        Origin {
            site: "acme.atlassian.net",
            now: self.clock.now(),
        }
    }

    /// The keys of the projects the user can browse.
    async fn project_keys(&self) -> Vec<String> {
        let projects = self.call("GET", "/rest/api/3/project/search", None).await;
        projects["values"]
            .as_array()
            .expect("values")
            .iter()
            .map(|p| {
                assert!(rows::project(p, self.origin()).is_some(), "{p}");
                p["key"].as_str().expect("a key").to_owned()
            })
            .collect()
    }

    /// Every issue the JQL selects, all pages, as the search answers them.
    async fn search(&self, jql: &str) -> Vec<Value> {
        let mut out = Vec::new();
        let mut token: Option<String> = None;
        loop {
            let mut body = json!({
                "jql": jql, "maxResults": 5,
                "fields": ["summary", "status", "issuetype", "priority", "assignee", "reporter",
                           "project", "labels", "created", "updated", "resolutiondate",
                           SPRINT_FIELD]
            });
            if let Some(t) = &token {
                body["nextPageToken"] = json!(t);
            }
            let page = self
                .call("POST", "/rest/api/3/search/jql", Some(&body))
                .await;
            out.extend(page["issues"].as_array().expect("issues").iter().cloned());
            match page["nextPageToken"].as_str() {
                Some(t) => token = Some(t.to_owned()),
                None => return out,
            }
        }
    }
}

fn custom() -> CustomFields {
    CustomFields {
        sprint: Some(SPRINT_FIELD.to_owned()),
        story_points: None,
    }
}

#[tokio::test]
async fn a_site_sync_asks_what_jira_accepts_and_maps_every_answer_to_rows() {
    let site = Site::new();
    let counts = site.sim.jira_site_counts().expect("the seeded site");
    let keys = site.project_keys().await;
    assert_eq!(keys.len(), counts.projects - counts.restricted_projects);
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();

    let issues = site.search(&jql::issues(&keys, None).expect("a JQL")).await;
    assert!(!issues.is_empty());
    let mut memberships = 0;
    for issue in &issues {
        let mapped = rows::issue(issue, &custom(), site.origin());
        let Some(Record::Jira(_)) = mapped.first() else {
            panic!("no row for {issue}");
        };
        memberships += mapped.len() - 1;
        let row = serde_json::to_value(&mapped[0]).expect("serializable");
        for field in [
            "summary",
            "status",
            "status_category",
            "updated_at",
            "created_at",
        ] {
            assert!(!row["Issue"][field].is_null(), "{field} of {row}");
        }
    }
    assert!(memberships > 0, "the sprint field is read");

    // One issue's children and the boards' sprints map too.
    let key = issues[0]["key"].as_str().expect("a key");
    let id = issues[0]["id"]
        .as_str()
        .expect("an id")
        .parse()
        .expect("digits");
    let o = site.origin();
    let changelog = site
        .call("GET", &format!("/rest/api/3/issue/{key}/changelog"), None)
        .await;
    for entry in changelog["values"].as_array().expect("values") {
        assert!(rows::changelog(entry, id, o).is_some(), "{entry}");
    }
    let comments = site
        .call("GET", &format!("/rest/api/3/issue/{key}/comment"), None)
        .await;
    for c in comments["comments"].as_array().expect("comments") {
        assert!(rows::comment(c, id, o).is_some(), "{c}");
    }
    let worklogs = site
        .call("GET", &format!("/rest/api/3/issue/{key}/worklog"), None)
        .await;
    for w in worklogs["worklogs"].as_array().expect("worklogs") {
        assert!(rows::worklog(w, id, o).is_some(), "{w}");
    }
    let boards = site.call("GET", "/rest/agile/1.0/board", None).await;
    let mut sprints = 0;
    for b in boards["values"].as_array().expect("values") {
        assert!(rows::board(b, o).is_some(), "{b}");
        if b["type"] == "scrum" {
            let path = format!("/rest/agile/1.0/board/{}/sprint", b["id"]);
            for s in site.call("GET", &path, None).await["values"]
                .as_array()
                .expect("values")
            {
                assert!(rows::sprint(s, o).is_some(), "{s}");
                sprints += 1;
            }
        }
    }
    assert!(sprints > 0);
}

#[tokio::test(start_paused = true)]
async fn a_watermark_in_the_users_zone_selects_exactly_what_changed_since() {
    let site = Site::new();
    let keys = site.project_keys().await;
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let all = site.search(&jql::issues(&keys, None).expect("a JQL")).await;
    // The watermark: the newest change the site holds, a few minutes on.
    let newest = all
        .iter()
        .filter_map(|i| i["fields"]["updated"].as_str().and_then(rows::instant))
        .max()
        .expect("an update");
    let mark = newest + jiff::SignedDuration::from_mins(10);
    tokio::time::advance(std::time::Duration::from_secs(20 * 60)).await;
    assert!(site.clock.now() > mark + jiff::SignedDuration::from_mins(5));
    let touched = site.sim.jira_touch(3);
    let zone = TimeZone::get(ZONE).expect("the time-zone database");
    let since = jql::issues(&keys, Some((mark, &zone))).expect("a JQL");
    let mut got: Vec<String> = site
        .search(&since)
        .await
        .iter()
        .map(|i| i["key"].as_str().expect("a key").to_owned())
        .collect();
    let mut want = touched;
    want.sort();
    got.sort();
    assert_eq!(got, want, "{since}");
}
