//! One synthetic PushEvent, the same shape for the store's and the server's tests and
//! benchmarks: actor `user{A}` and repository `org{R}/repo{R}` with their detail URLs, one
//! commit, head and before SHAs and the push id derived from the event id.

use headroom_core::clock::Timestamp;
use headroom_store::{ActorRef, EventOrigin, PushEventWrite, RepositoryRef};
use serde_json::json;

#[allow(clippy::cast_possible_wrap, dead_code)]
pub fn push_event(
    id: u64,
    actor: i64,
    repo: i64,
    occurred: Timestamp,
    received: Timestamp,
    origin: EventOrigin,
) -> PushEventWrite {
    PushEventWrite {
        github_event_id: id.to_string(),
        github_push_id: Some(id as i64),
        actor: ActorRef {
            github_id: actor,
            login: format!("user{actor}"),
            display_login: None,
            url: Some(format!("https://api.github.com/users/user{actor}")),
            avatar_url: None,
        },
        repository: RepositoryRef {
            github_id: repo,
            full_name: format!("org{repo}/repo{repo}"),
            url: Some(format!("https://api.github.com/repos/org{repo}/repo{repo}")),
        },
        git_ref: "refs/heads/main".into(),
        head_sha: format!("{id:040x}"),
        before_sha: Some(format!("{:040x}", id + 1)),
        commit_count: Some(1),
        distinct_commit_count: Some(1),
        occurred_at: occurred,
        received_at: received,
        ingestion_run_id: None,
        origin,
        raw: json!({"id": id.to_string(), "type": "PushEvent", "payload": {"ref": "refs/heads/main",
            "head": format!("{id:040x}"), "before": format!("{:040x}", id + 1), "push_id": id}}),
    }
}
