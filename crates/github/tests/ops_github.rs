//! GitHub's side of the provider contract against the in-process simulator: each operation's
//! request and answer, the git data API's single commit for several files, the error kinds,
//! and mutations sent exactly once when their answer is lost.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::provider::{
    CommitFiles, FileChange, FileContent, FileMode, GitProvider, MergeMethod, MergePullRequest,
    NewBranch, NewPullRequest, NewRepository, ProtectionRule, ProviderError, PullState, Recheck,
    RepoRef,
};
use headroom_core::{Governor, Subject};
use headroom_github::ops::GitHubOps;
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::{SimTransport, Transport, TransportError};
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::{SimConfig, Simulator, TokenSpec};

const API: &str = "http://127.0.0.1:7000";
const TOKEN: &str = "ghp_opsgithubtoken000000000000000000001";

/// Loses the answer of requests whose path ends with `lose_suffix` (the simulator applies
/// them; the client sees a timeout), counts every request that left the exit door, and keeps
/// the bodies of the trees it sent.
#[derive(Debug)]
struct LosingTransport {
    inner: SimTransport,
    lose_suffix: Option<&'static str>,
    sent: AtomicU32,
    trees: Mutex<Vec<serde_json::Value>>,
}

impl Transport for LosingTransport {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            self.sent.fetch_add(1, Ordering::SeqCst);
            if request.uri().path().ends_with("/git/trees") {
                let tree = serde_json::from_slice(request.body()).expect("a JSON tree");
                self.trees.lock().expect("trees").push(tree);
            }
            let lose = self.lose_suffix.is_some_and(|s| {
                request.method() != http::Method::GET && request.uri().path().ends_with(s)
            });
            let answer = self.inner.send(request).await;
            if lose {
                std::future::pending::<()>().await;
            }
            answer
        })
    }
}

struct Rig {
    sim: Simulator,
    ops: GitHubOps,
    transport: Arc<LosingTransport>,
}

async fn rig(lose_suffix: Option<&'static str>, recheck: Recheck) -> Rig {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let mut config = SimConfig::default().with_token(TokenSpec::user(TOKEN, "alice"));
    config.public_base_url = API.to_owned();
    let sim = Simulator::new(config, clock).expect("simulator");
    let governor =
        Governor::in_memory(GovernorConfig::default(), Arc::new(clock)).expect("governor");
    let credentials = Arc::new(MemoryCredentials::default());
    credentials
        .record(
            "127.0.0.1",
            Credential::new(TOKEN).fingerprint(),
            &Subject::User("alice".into()),
        )
        .await;
    let transport = Arc::new(LosingTransport {
        inner: SimTransport::new(sim.clone()),
        lose_suffix,
        sent: AtomicU32::new(0),
        trees: Mutex::new(Vec::new()),
    });
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback"),
        governor,
        transport.clone(),
        clock,
    );
    parts.credentials = credentials;
    parts.config.jitter_seed = Some(3);
    let ops =
        GitHubOps::new(Client::new(parts), Some(Credential::new(TOKEN))).with_recheck(recheck);
    Rig {
        sim,
        ops,
        transport,
    }
}

fn new_repo(name: &str) -> NewRepository {
    NewRepository {
        name: name.into(),
        owner: None,
        description: Some("contract".into()),
        private: false,
        initialize: true,
    }
}

fn text(path: &str, content: &str, mode: FileMode) -> FileChange {
    FileChange {
        path: path.into(),
        content: Some(FileContent::Text(content.into())),
        mode,
        exists: false,
    }
}

fn logged(sim: &Simulator, method: &str, suffix: &str) -> usize {
    sim.request_log()
        .iter()
        .filter(|e| e.method == method && e.path.split('?').next().unwrap_or("").ends_with(suffix))
        .count()
}

#[tokio::test(start_paused = true)]
async fn the_eight_operations_create_commit_protect_open_and_merge() {
    let Rig { sim, ops, .. } = rig(None, Recheck::Never).await;
    let created = ops
        .create_repo(&new_repo("widgets"))
        .await
        .expect("created");
    let repo = RepoRef::new("alice", "widgets");
    assert_eq!(created.repo, repo);
    let got = ops.get_repo(&repo).await.expect("read");
    assert_eq!(got.default_branch.as_deref(), Some("main"));

    let branch = ops
        .create_branch(
            &repo,
            &NewBranch {
                name: "feature".into(),
                from: "main".into(),
            },
        )
        .await
        .expect("branch");
    let commit = ops
        .commit_files(
            &repo,
            &CommitFiles {
                branch: "feature".into(),
                message: "two files".into(),
                files: vec![
                    text("src/lib.rs", "pub fn a() {}\n", FileMode::Regular),
                    FileChange {
                        path: "run.sh".into(),
                        content: Some(FileContent::Binary(b"#!/bin/sh\necho hi\n".to_vec())),
                        mode: FileMode::Executable,
                        exists: false,
                    },
                ],
            },
        )
        .await
        .expect("commit");
    assert_eq!(commit.parents, vec![branch.sha.clone()]);
    // One commit for both files: exactly one git commit and one ref update went out.
    assert_eq!(logged(&sim, "POST", "/git/commits"), 1);
    assert_eq!(logged(&sim, "PATCH", "/git/refs/heads/feature"), 1);

    let rule = ProtectionRule {
        branch: "main".into(),
        require_pull_request: false,
        required_approvals: 0,
        allow_force_push: false,
    };
    ops.protect_branch(&repo, &rule).await.expect("protected");
    let pull = ops
        .open_pull_request(
            &repo,
            &NewPullRequest {
                title: "Add files".into(),
                head: "feature".into(),
                base: "main".into(),
                body: None,
            },
        )
        .await
        .expect("opened");
    assert_eq!(pull.state, PullState::Open);
    let merged = ops
        .merge_pull_request(
            &repo,
            &MergePullRequest {
                number: pull.number,
                method: MergeMethod::Merge,
                commit_message: None,
                expected_head_sha: Some(commit.sha.clone()),
            },
        )
        .await
        .expect("merged");
    let branches = ops.list_branches(&repo).await.expect("branches");
    let main = branches.iter().find(|b| b.name == "main").expect("main");
    assert_eq!(main.sha, merged.sha);
    assert!(main.protected);
    assert!(
        branches
            .iter()
            .any(|b| b.name == "feature" && b.sha == commit.sha)
    );
}

#[tokio::test(start_paused = true)]
async fn errors_say_what_happened() {
    let Rig { ops, .. } = rig(None, Recheck::Never).await;
    let missing = RepoRef::new("alice", "nothing-here");
    assert!(matches!(
        ops.get_repo(&missing).await,
        Err(ProviderError::NotFound(_))
    ));
    ops.create_repo(&new_repo("taken")).await.expect("first");
    assert!(matches!(
        ops.create_repo(&new_repo("taken")).await,
        Err(ProviderError::Conflict(_))
    ));
    let repo = RepoRef::new("alice", "taken");
    let main = NewBranch {
        name: "main".into(),
        from: "main".into(),
    };
    assert!(matches!(
        ops.create_branch(&repo, &main).await,
        Err(ProviderError::Conflict(_))
    ));
    let nothing = NewPullRequest {
        title: "empty".into(),
        head: "main".into(),
        base: "main".into(),
        body: None,
    };
    assert!(matches!(
        ops.open_pull_request(&repo, &nothing).await,
        Err(ProviderError::Validation(_))
    ));
    let merge = MergePullRequest {
        number: 999,
        method: MergeMethod::Squash,
        commit_message: None,
        expected_head_sha: None,
    };
    assert!(matches!(
        ops.merge_pull_request(&repo, &merge).await,
        Err(ProviderError::NotFound(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_lost_answer_is_ambiguous_and_sent_once() {
    let Rig {
        sim,
        ops,
        transport,
    } = rig(Some("/user/repos"), Recheck::Never).await;
    let result = ops.create_repo(&new_repo("lost")).await;
    assert!(
        matches!(result, Err(ProviderError::Ambiguous(_))),
        "{result:?}"
    );
    assert_eq!(logged(&sim, "POST", "/user/repos"), 1);
    assert_eq!(transport.sent.load(Ordering::SeqCst), 1);
}

#[tokio::test(start_paused = true)]
async fn the_recheck_finds_what_a_lost_create_made_without_resending() {
    let Rig { sim, ops, .. } = rig(Some("/user/repos"), Recheck::AfterAmbiguous).await;
    let found = ops
        .create_repo(&new_repo("rechecked"))
        .await
        .expect("found by the re-check");
    assert_eq!(found.repo, RepoRef::new("alice", "rechecked"));
    assert_eq!(logged(&sim, "POST", "/user/repos"), 1);
    assert_eq!(logged(&sim, "GET", "/repos/alice/rechecked"), 1);
}

#[tokio::test(start_paused = true)]
async fn a_branch_name_never_escapes_its_path_segment() {
    let Rig {
        sim,
        ops,
        transport,
    } = rig(None, Recheck::Never).await;
    let repo = RepoRef::new("alice", "demo");
    let rule = ProtectionRule {
        branch: "main/../../../../../orgs/acme/memberships/mallory#".into(),
        require_pull_request: false,
        required_approvals: 0,
        allow_force_push: false,
    };
    let refused = ops.protect_branch(&repo, &rule).await;
    assert!(
        matches!(&refused, Err(ProviderError::Validation(m)) if m.contains("branch name")),
        "{refused:?}"
    );
    let escaping = NewBranch {
        name: "x".into(),
        from: "../../../../user".into(),
    };
    assert!(matches!(
        ops.create_branch(&repo, &escaping).await,
        Err(ProviderError::Validation(_))
    ));
    let commit = CommitFiles {
        branch: "a/../../b".into(),
        message: "m".into(),
        files: vec![text("a.txt", "a", FileMode::Regular)],
    };
    assert!(matches!(
        ops.commit_files(&repo, &commit).await,
        Err(ProviderError::Validation(_))
    ));
    // Refused before sending: nothing left the exit door, nothing reached GitHub.
    assert_eq!(transport.sent.load(Ordering::SeqCst), 0);
    assert!(sim.request_log().is_empty());
}

#[tokio::test(start_paused = true)]
async fn an_owner_or_repository_name_never_escapes_its_path_segment() {
    let Rig {
        sim,
        ops,
        transport,
    } = rig(None, Recheck::Never).await;
    let mut new = new_repo("x");
    new.owner = Some("../user".into());
    let refused = ops.create_repo(&new).await;
    assert!(
        matches!(&refused, Err(ProviderError::Validation(m)) if m.contains("owner")),
        "{refused:?}"
    );
    for repo in [
        RepoRef::new("../orgs/acme", "x"),
        RepoRef::new("alice", ".."),
        RepoRef::new("alice", "%2e%2e"),
        RepoRef::new("alice", "demo#"),
    ] {
        let got = ops.get_repo(&repo).await;
        assert!(
            matches!(got, Err(ProviderError::Validation(_))),
            "{repo:?}: {got:?}"
        );
    }
    assert_eq!(transport.sent.load(Ordering::SeqCst), 0);
    assert!(sim.request_log().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_branch_with_a_slash_is_still_routed() {
    let Rig { sim, ops, .. } = rig(None, Recheck::Never).await;
    ops.create_repo(&new_repo("demo")).await.expect("created");
    let repo = RepoRef::new("alice", "demo");
    let feature = NewBranch {
        name: "feature/x".into(),
        from: "main".into(),
    };
    ops.create_branch(&repo, &feature).await.expect("branch");
    let commit = CommitFiles {
        branch: "feature/x".into(),
        message: "one file".into(),
        files: vec![text("a.txt", "a", FileMode::Regular)],
    };
    let made = ops.commit_files(&repo, &commit).await.expect("commit");
    let rule = ProtectionRule {
        branch: "feature/x".into(),
        require_pull_request: false,
        required_approvals: 0,
        allow_force_push: false,
    };
    ops.protect_branch(&repo, &rule).await.expect("protected");
    let branches = ops.list_branches(&repo).await.expect("branches");
    let x = branches
        .iter()
        .find(|b| b.name == "feature/x")
        .expect("listed");
    assert_eq!(x.sha, made.sha);
    assert!(x.protected);
    // The protection path holds the branch as one segment, as GitHub documents.
    assert_eq!(
        sim.count_requests("PUT", "/repos/alice/demo/branches/feature%2Fx/protection"),
        1
    );
}

#[tokio::test(start_paused = true)]
async fn a_symlink_is_committed_as_a_link_with_its_target_as_content() {
    let Rig { ops, transport, .. } = rig(None, Recheck::Never).await;
    ops.create_repo(&new_repo("links")).await.expect("created");
    let repo = RepoRef::new("alice", "links");
    let commit = CommitFiles {
        branch: "main".into(),
        message: "a link".into(),
        files: vec![FileChange {
            path: "leak".into(),
            content: Some(FileContent::Text("/etc/passwd".into())),
            mode: FileMode::Symlink,
            exists: false,
        }],
    };
    ops.commit_files(&repo, &commit).await.expect("committed");
    let trees = transport.trees.lock().expect("trees").clone();
    assert_eq!(trees.len(), 1);
    assert_eq!(
        trees[0]["tree"],
        serde_json::json!([
            {"path": "leak", "mode": "120000", "type": "blob", "content": "/etc/passwd"}
        ])
    );
}
