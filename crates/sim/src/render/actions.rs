//! GitHub Actions: workflow runs, jobs, and jobs as check runs.

use super::*;

/// A workflow run. `head` is its head commit, when the repository has it.
pub fn run(
    base: &str,
    world: &World,
    r: &RepoRec,
    run: &RunRec,
    head: Option<&CommitRec>,
) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}/actions/runs/{}", run.id);
    let workflow_id = r.id % 100_000;
    let file = format!(
        ".github/workflows/{}.yml",
        run.name.to_ascii_lowercase().replace(' ', "-")
    );
    let check_suite_id = run.id + 1;
    let actor = head.map_or_else(
        || user_ref(base, world, &r.owner),
        |c| user_ref(base, world, &c.author),
    );
    let head_commit = head.map_or(Value::Null, |c| {
        let person = json!({
            "name": world.user(&c.author).and_then(|u| u.name.clone()).unwrap_or_else(|| c.author.clone()),
            "email": format!("{}@users.noreply.github.com", c.author),
        });
        json!({
            "id": c.sha,
            "tree_id": tree_sha(c),
            "message": c.message,
            "timestamp": ts(c.date),
            "author": person.clone(),
            "committer": person,
        })
    });
    let repo_v = repo(base, world, r);
    json!({
        "id": run.id,
        "name": run.name,
        "node_id": node_id("WFR", run.id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": file,
        "display_title": head.map_or_else(|| run.name.clone(), |c| {
            c.message.lines().next().unwrap_or_default().to_owned()
        }),
        "run_number": run.run_number,
        "event": run.event,
        "status": "completed",
        "conclusion": run.conclusion,
        "workflow_id": workflow_id,
        "check_suite_id": check_suite_id,
        "check_suite_node_id": node_id("CS", check_suite_id),
        "url": api,
        "html_url": format!("https://github.com/{full}/actions/runs/{}", run.id),
        "pull_requests": [],
        "created_at": ts(run.created_at),
        "updated_at": ts(run.created_at),
        "actor": actor.clone(),
        "triggering_actor": actor,
        "run_attempt": 1,
        "referenced_workflows": [],
        "run_started_at": ts(run.created_at),
        "jobs_url": format!("{api}/jobs"),
        "logs_url": format!("{api}/logs"),
        "check_suite_url": format!("{base}/repos/{full}/check-suites/{check_suite_id}"),
        "artifacts_url": format!("{api}/artifacts"),
        "cancel_url": format!("{api}/cancel"),
        "rerun_url": format!("{api}/rerun"),
        "previous_attempt_url": Value::Null,
        "workflow_url": format!("{base}/repos/{full}/actions/workflows/{workflow_id}"),
        "head_commit": head_commit,
        "repository": repo_v.clone(),
        "head_repository": repo_v,
    })
}

/// A workflow job.
pub fn job(base: &str, full: &str, run: &RunRec, j: &JobRec) -> Value {
    let step = |number: u64, name: &str, conclusion: &str| {
        json!({
            "name": name, "status": "completed", "conclusion": conclusion, "number": number,
            "started_at": ts(j.started_at), "completed_at": ts(j.completed_at),
        })
    };
    json!({
        "id": j.id,
        "run_id": run.id,
        "run_url": format!("{base}/repos/{full}/actions/runs/{}", run.id),
        "run_attempt": 1,
        "node_id": node_id("CR", j.id),
        "head_sha": run.head_sha,
        "url": format!("{base}/repos/{full}/actions/jobs/{}", j.id),
        "html_url": format!("https://github.com/{full}/actions/runs/{}/job/{}", run.id, j.id),
        "status": "completed",
        "conclusion": j.conclusion,
        "created_at": ts(run.created_at),
        "started_at": ts(j.started_at),
        "completed_at": ts(j.completed_at),
        "name": j.name,
        "steps": [step(1, "Set up job", "success"), step(2, &j.name, j.conclusion)],
        "check_run_url": format!("{base}/repos/{full}/check-runs/{}", j.id),
        "labels": ["ubuntu-latest"],
        "runner_id": 2,
        "runner_name": "GitHub Actions 2",
        "runner_group_id": 2,
        "runner_group_name": "GitHub Actions",
        "workflow_name": run.name,
        "head_branch": run.head_branch,
    })
}

/// GitHub Actions, the app behind every check run of a workflow.
pub(super) fn actions_app(base: &str) -> Value {
    json!({
        "id": 15368,
        "slug": "github-actions",
        "node_id": "MDM6QXBwMTUzNjg=",
        "owner": account(base, "github", 9919, true),
        "name": "GitHub Actions",
        "description": "Automate your workflow from idea to production",
        "external_url": "https://help.github.com/en/actions",
        "html_url": "https://github.com/apps/github-actions",
        "created_at": "2018-07-30T09:30:17Z",
        "updated_at": "2019-12-10T19:04:12Z",
        "permissions": {"actions": "write", "checks": "write", "contents": "write", "metadata": "read"},
        "events": ["check_run", "check_suite", "push", "pull_request"],
    })
}

/// A check run (a workflow job seen from the Checks API).
pub fn check_run(base: &str, full: &str, run: &RunRec, j: &JobRec) -> Value {
    let api = format!("{base}/repos/{full}/check-runs/{}", j.id);
    let html = format!(
        "https://github.com/{full}/actions/runs/{}/job/{}",
        run.id, j.id
    );
    json!({
        "id": j.id,
        "head_sha": run.head_sha,
        "node_id": node_id("CR", j.id),
        "external_id": format!("{}", j.id),
        "url": api,
        "html_url": html,
        "details_url": html,
        "status": "completed",
        "conclusion": j.conclusion,
        "started_at": ts(j.started_at),
        "completed_at": ts(j.completed_at),
        "output": {
            "title": Value::Null,
            "summary": Value::Null,
            "text": Value::Null,
            "annotations_count": 0,
            "annotations_url": format!("{api}/annotations"),
        },
        "name": j.name,
        "check_suite": {"id": run.id + 1},
        "app": actions_app(base),
        "pull_requests": [],
    })
}
