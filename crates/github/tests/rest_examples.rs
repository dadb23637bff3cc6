//! headroom's REST parsers fed GitHub's own examples: every response example of the vendored
//! REST description (`schemas/github/rest-api.github.com.subset.json`) for an operation headroom
//! parses goes through the real parser function, and what it parsed must equal what the example
//! says. A parser that rejects GitHub's own example has a bug.

use std::collections::BTreeMap;

use headroom_core::clock::Timestamp;
use headroom_github::feed::enrich::{search_envelope, validate_item};
use headroom_github::feed::validate::{Verdict, validate};
use headroom_github::org::rest_rows;
use headroom_store::Record;
use headroom_store::feed_state::{Claimed, EntityKind};
use serde_json::Value;

const SUBSET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../schemas/github/rest-api.github.com.subset.json"
);

/// The description's response examples, by operation.
struct Examples(Value);

impl Examples {
    fn load() -> Examples {
        let text = std::fs::read_to_string(SUBSET).expect("the vendored REST description");
        Examples(serde_json::from_str(&text).expect("JSON"))
    }

    fn resolve<'a>(&'a self, v: &'a Value) -> &'a Value {
        let mut v = v;
        for _ in 0..4 {
            match v.get("$ref").and_then(Value::as_str) {
                Some(r) => {
                    v = self
                        .0
                        .pointer(r.trim_start_matches('#'))
                        .unwrap_or_else(|| panic!("{r} resolves"));
                }
                None => break,
            }
        }
        v
    }

    /// Every example of `method path` answering `status`, by name; at least one.
    fn of(&self, method: &str, path: &str, status: u16) -> BTreeMap<String, Value> {
        let response =
            self.resolve(&self.0["paths"][path][method]["responses"][status.to_string()]);
        let examples = response["content"]["application/json"]["examples"]
            .as_object()
            .unwrap_or_else(|| panic!("{method} {path} {status} has examples"));
        let out: BTreeMap<String, Value> = examples
            .iter()
            .map(|(name, e)| {
                let e = self.resolve(e);
                let value = self.resolve(&e["value"]);
                // An example whose value is a reference to another example object.
                let value = value.get("value").unwrap_or(value);
                (name.clone(), value.clone())
            })
            .collect();
        assert!(!out.is_empty(), "{method} {path} {status}");
        out
    }
}

fn now() -> Timestamp {
    "2026-11-30T10:00:00Z".parse().expect("a timestamp")
}

fn text(v: &Value, k: &str) -> Option<String> {
    v.get(k).and_then(Value::as_str).map(str::to_owned)
}

fn int(v: &Value, k: &str) -> Option<i64> {
    v.get(k).and_then(Value::as_i64)
}

fn at(v: &Value, k: &str) -> Option<Timestamp> {
    text(v, k).map(|s| s.parse().expect("GitHub's timestamps parse"))
}

fn array<'a>(v: &'a Value, k: &str) -> &'a [Value] {
    v[k].as_array()
        .map(Vec::as_slice)
        .unwrap_or_else(|| panic!("{k} is a list"))
}

const REPO: i64 = 1_296_269;

#[test]
fn workflow_runs_parse_as_github_describes_them() {
    let examples = Examples::load();
    let mut seen = 0;
    for (name, body) in examples.of("get", "/repos/{owner}/{repo}/actions/runs", 200) {
        for run in array(&body, "workflow_runs") {
            let Some(Record::WorkflowRun(r)) = rest_rows::workflow_run(run, REPO, now()) else {
                panic!("{name}: the parser rejected GitHub's run {run}");
            };
            assert_eq!(Some(r.github_id), int(run, "id"), "{name}");
            assert_eq!(r.repository_github_id, REPO);
            assert_eq!(r.node_id, text(run, "node_id"));
            assert_eq!(r.workflow_id, int(run, "workflow_id"));
            assert_eq!(r.name, text(run, "name"));
            assert_eq!(r.event, text(run, "event"));
            assert_eq!(r.head_branch, text(run, "head_branch"));
            assert_eq!(r.head_sha, text(run, "head_sha"));
            assert_eq!(r.status, text(run, "status"));
            assert_eq!(r.conclusion, text(run, "conclusion"));
            assert_eq!(r.run_number, int(run, "run_number"));
            assert_eq!(r.run_attempt, int(run, "run_attempt"));
            assert_eq!(r.github_created_at, at(run, "created_at"));
            assert_eq!(r.github_updated_at, at(run, "updated_at"));
            assert_eq!(&r.raw, run, "the raw JSON is kept whole");
            seen += 1;
        }
    }
    assert!(seen >= 1);
    // The example is GitHub's, not a rewrite: its values, literally.
    let body = &examples.of("get", "/repos/{owner}/{repo}/actions/runs", 200)["default"];
    let Some(Record::WorkflowRun(r)) =
        rest_rows::workflow_run(&body["workflow_runs"][0], REPO, now())
    else {
        panic!("parsed above");
    };
    assert_eq!(
        (r.github_id, r.run_number, r.status.as_deref(), r.conclusion),
        (30_433_642, Some(562), Some("queued"), None)
    );
}

#[test]
fn workflow_jobs_parse_as_github_describes_them() {
    let examples = Examples::load();
    let mut seen = 0;
    for (name, body) in examples.of(
        "get",
        "/repos/{owner}/{repo}/actions/runs/{run_id}/jobs",
        200,
    ) {
        for job in array(&body, "jobs") {
            // A fallback run id that is not the job's: the job's own `run_id` must win.
            let Some(Record::WorkflowJob(j)) = rest_rows::workflow_job(job, REPO, -1, now()) else {
                panic!("{name}: the parser rejected GitHub's job {job}");
            };
            assert_eq!(Some(j.github_id), int(job, "id"));
            assert_eq!(Some(j.workflow_run_github_id), int(job, "run_id"));
            assert_eq!(j.node_id, text(job, "node_id"));
            assert_eq!(j.name, text(job, "name"));
            assert_eq!(j.status, text(job, "status"));
            assert_eq!(j.conclusion, text(job, "conclusion"));
            assert_eq!(j.started_at, at(job, "started_at"));
            assert_eq!(j.completed_at, at(job, "completed_at"));
            seen += 1;
        }
    }
    assert!(seen >= 1);
}

#[test]
fn check_runs_parse_as_github_describes_them() {
    let examples = Examples::load();
    let mut seen = 0;
    for (name, body) in examples.of("get", "/repos/{owner}/{repo}/commits/{ref}/check-runs", 200) {
        for check in array(&body, "check_runs") {
            let Some(Record::CheckRun(c)) = rest_rows::check_run(check, REPO, now()) else {
                panic!("{name}: the parser rejected GitHub's check run {check}");
            };
            assert_eq!(Some(c.github_id), int(check, "id"));
            assert_eq!(c.node_id, text(check, "node_id"));
            assert_eq!(c.check_suite_id, int(&check["check_suite"], "id"));
            assert_eq!(c.head_sha, text(check, "head_sha"));
            assert_eq!(c.name, text(check, "name"));
            assert_eq!(c.status, text(check, "status"));
            assert_eq!(c.conclusion, text(check, "conclusion"));
            assert_eq!(c.started_at, at(check, "started_at"));
            assert_eq!(c.completed_at, at(check, "completed_at"));
            assert_eq!((c.github_id, c.check_suite_id), (4, Some(5)), "{name}");
            seen += 1;
        }
    }
    assert!(seen >= 1);
}

#[test]
fn commit_files_parse_as_github_describes_them() {
    let examples = Examples::load();
    let mut files: Vec<(String, Value)> = Vec::new();
    for (name, commit) in examples.of("get", "/repos/{owner}/{repo}/commits/{ref}", 200) {
        let sha = text(&commit, "sha").expect("a commit has a sha");
        // Stage 6 reads `files` of the commit.
        files.extend(
            array(&commit, "files")
                .iter()
                .map(|f| (sha.clone(), f.clone())),
        );
        assert!(!files.is_empty(), "{name} lists files");
    }
    // A pull request's files are the same `diff-entry` objects.
    for (_, list) in examples.of(
        "get",
        "/repos/{owner}/{repo}/pulls/{pull_number}/files",
        200,
    ) {
        let list = list.as_array().cloned().expect("a list");
        files.extend(list.into_iter().map(|f| ("0".repeat(40), f)));
    }
    for (sha, f) in &files {
        let Some(Record::CommitFile(c)) = rest_rows::commit_file(f, REPO, sha, now()) else {
            panic!("the parser rejected GitHub's file {f}");
        };
        assert_eq!(&c.commit_sha, sha);
        assert_eq!(Some(c.path), text(f, "filename"));
        assert_eq!(c.previous_path, text(f, "previous_filename"));
        assert_eq!(c.status, text(f, "status"));
        assert_eq!(c.additions, int(f, "additions"));
        assert_eq!(c.deletions, int(f, "deletions"));
        assert_eq!(c.changes, int(f, "changes"));
        assert!(c.additions.is_some() && c.changes.is_some());
    }
    assert!(files.len() >= 2);
}

fn claimed(item: &Value, name_key: &str) -> Claimed {
    Claimed {
        github_id: int(item, "id").expect("an id"),
        name: text(item, name_key).expect("a name"),
        detail_url: text(item, "url"),
        detail_attempts: 0,
        batch_attempts: 0,
    }
}

#[test]
fn user_details_and_searches_enrich_actors() {
    let examples = Examples::load();
    let mut details = Vec::new();
    for path in ["/users/{username}", "/user/{account_id}", "/user"] {
        details.extend(examples.of("get", path, 200).into_values());
    }
    assert!(details.len() >= 4);
    for user in &details {
        let member = claimed(user, "login");
        let e = validate_item(EntityKind::Actor, &member, user, false)
            .unwrap_or_else(|why| panic!("a user detail rejected ({why}): {user}"));
        assert_eq!(Some(e.name), text(user, "login"));
        assert_eq!(e.account_type, text(user, "type"));
        assert_eq!(&e.raw, user);
    }
    for (name, page) in examples.of("get", "/search/users", 200) {
        let (items, incomplete) =
            search_envelope(&page).unwrap_or_else(|| panic!("{name}: envelope rejected"));
        assert_eq!(incomplete, page["incomplete_results"].as_bool());
        assert!(!items.is_empty());
        for item in items {
            let e = validate_item(EntityKind::Actor, &claimed(item, "login"), item, true)
                .unwrap_or_else(|why| panic!("a user search item rejected ({why}): {item}"));
            assert_eq!(Some(e.name), text(item, "login"));
            assert_eq!(e.account_type, text(item, "type"));
        }
    }
}

fn assert_repository(item: &Value, search: bool) {
    let e = validate_item(
        EntityKind::Repository,
        &claimed(item, "full_name"),
        item,
        search,
    )
    .unwrap_or_else(|why| panic!("a repository rejected ({why}): {item}"));
    assert_eq!(Some(e.name), text(item, "full_name"));
    assert_eq!(e.owner_login, text(&item["owner"], "login"));
    assert_eq!(e.owner_github_id, int(&item["owner"], "id"));
    assert_eq!(e.fork, item["fork"].as_bool());
    assert_eq!(e.archived, item["archived"].as_bool());
    assert_eq!(e.default_branch, text(item, "default_branch"));
    assert_eq!(e.github_created_at, at(item, "created_at"));
}

#[test]
fn repository_details_and_searches_enrich_repositories() {
    let examples = Examples::load();
    let details = examples.of("get", "/repos/{owner}/{repo}", 200);
    for repo in details.values() {
        assert_repository(repo, false);
    }
    assert_eq!(
        details["default-response"]["full_name"],
        "octocat/Hello-World"
    );
    for (name, page) in examples.of("get", "/search/repositories", 200) {
        let (items, incomplete) =
            search_envelope(&page).unwrap_or_else(|| panic!("{name}: envelope rejected"));
        assert_eq!(incomplete, Some(false));
        assert_eq!(items.len(), 1);
        for item in items {
            assert_repository(item, true);
        }
    }
}

#[test]
fn the_public_events_example_is_judged_envelope_by_envelope() {
    let examples = Examples::load();
    let page = &examples.of("get", "/events", 200)["default"];
    let envelopes = page.as_array().expect("a list");
    let mut pushes = 0;
    for e in envelopes {
        let event_type = text(e, "type").expect("a type");
        match validate(e) {
            Verdict::Push(p) => {
                assert_eq!(event_type, "PushEvent");
                let payload = &e["payload"];
                assert_eq!(Some(p.github_event_id), text(e, "id"));
                assert_eq!(p.github_push_id, int(payload, "push_id"));
                assert_eq!(Some(p.actor.github_id), int(&e["actor"], "id"));
                assert_eq!(Some(p.actor.login), text(&e["actor"], "login"));
                assert_eq!(p.actor.display_login, text(&e["actor"], "display_login"));
                assert_eq!(p.actor.url, text(&e["actor"], "url"));
                assert_eq!(p.actor.avatar_url, text(&e["actor"], "avatar_url"));
                assert_eq!(Some(p.repository.github_id), int(&e["repo"], "id"));
                assert_eq!(Some(p.repository.full_name), text(&e["repo"], "name"));
                assert_eq!(p.repository.url, text(&e["repo"], "url"));
                assert_eq!(Some(p.git_ref), text(payload, "ref"));
                assert_eq!(Some(p.head_sha), text(payload, "head"));
                assert_eq!(p.before_sha, text(payload, "before"));
                // The current payload shape has no commit counts.
                assert_eq!((p.commit_count, p.distinct_commit_count), (None, None));
                assert_eq!(Some(p.occurred_at), at(e, "created_at"));
                pushes += 1;
            }
            Verdict::Ignored { event_type: t } => assert_eq!(t, event_type),
            Verdict::Quarantine(r) => panic!("GitHub's own {event_type} quarantined: {r:?}"),
        }
    }
    assert_eq!(pushes, 1, "the example has one PushEvent");
}
