//! The contract suite, written once over the trait: each function takes a rig of either
//! provider and asserts what the contract promises, whatever the host.

#![allow(clippy::expect_used, clippy::panic)]

use headroom_core::provider::{
    CommitFiles, FileChange, FileContent, FileMode, GitProvider, MergeMethod, MergePullRequest,
    NewBranch, NewPullRequest, NewRepository, OpResult, ProtectionRule, ProviderError, PullState,
    RepoRef,
};
use headroom_core::signal::Provider;
use http::Method;

use super::rig::{Fault, Rig};

pub fn repo() -> RepoRef {
    RepoRef::new("alice", "widgets")
}

pub fn new_repo(name: &str) -> NewRepository {
    NewRepository {
        name: name.into(),
        owner: None,
        description: Some("the contract suite".into()),
        private: false,
        initialize: true,
    }
}

fn feature() -> NewBranch {
    NewBranch {
        name: "feature".into(),
        from: "main".into(),
    }
}

fn two_files(branch: &str) -> CommitFiles {
    CommitFiles {
        branch: branch.into(),
        message: "two files in one commit".into(),
        files: vec![
            FileChange {
                path: "src/lib.rs".into(),
                content: Some(FileContent::Text("pub fn answer() -> u32 { 42 }\n".into())),
                mode: FileMode::Regular,
                exists: false,
            },
            FileChange {
                path: "bin/run.sh".into(),
                content: Some(FileContent::Binary(b"#!/bin/sh\necho run\n".to_vec())),
                mode: FileMode::Executable,
                exists: false,
            },
        ],
    }
}

fn protect_main() -> ProtectionRule {
    ProtectionRule {
        branch: "main".into(),
        require_pull_request: false,
        required_approvals: 0,
        allow_force_push: false,
    }
}

fn pull() -> NewPullRequest {
    NewPullRequest {
        title: "Add the answer".into(),
        head: "feature".into(),
        base: "main".into(),
        body: Some("from the contract suite".into()),
    }
}

fn merge(number: u64) -> MergePullRequest {
    MergePullRequest {
        number,
        method: MergeMethod::Merge,
        commit_message: None,
        expected_head_sha: None,
    }
}

/// A repository with a `feature` branch one commit ahead of `main`.
pub async fn setup<P: GitProvider>(ops: &P) {
    ops.create_repo(&new_repo("widgets"))
        .await
        .expect("repository");
    ops.create_branch(&repo(), &feature())
        .await
        .expect("branch");
    ops.commit_files(&repo(), &two_files("feature"))
        .await
        .expect("commit");
}

/// Every operation's success, in the order a user would run them.
pub async fn lifecycle<P: GitProvider>(rig: Rig<P>) {
    let ops = &rig.ops;
    let created = ops
        .create_repo(&new_repo("widgets"))
        .await
        .expect("created");
    assert_eq!(created.repo, repo());
    assert!(!created.private);
    let got = ops.get_repo(&repo()).await.expect("read");
    assert_eq!(got.id, created.id);
    assert_eq!(got.default_branch.as_deref(), Some("main"));
    let main_before = ops.list_branches(&repo()).await.expect("branches");
    let main_sha = main_before
        .iter()
        .find(|b| b.name == "main")
        .expect("main")
        .sha
        .clone();

    let branch = ops
        .create_branch(&repo(), &feature())
        .await
        .expect("branch");
    assert_eq!(
        (branch.name.as_str(), branch.sha.as_str()),
        ("feature", main_sha.as_str())
    );
    let commit = ops
        .commit_files(&repo(), &two_files("feature"))
        .await
        .expect("commit");
    assert_eq!(commit.parents, vec![main_sha.clone()]);

    let rule = ops
        .protect_branch(&repo(), &protect_main())
        .await
        .expect("protected");
    assert_eq!(rule.branch, "main");
    let opened = ops
        .open_pull_request(&repo(), &pull())
        .await
        .expect("opened");
    assert_eq!(opened.state, PullState::Open);
    assert_eq!(
        (opened.head.as_str(), opened.base.as_str()),
        ("feature", "main")
    );
    let merged = ops
        .merge_pull_request(&repo(), &merge(opened.number))
        .await
        .expect("merged");
    assert_eq!(merged.number, opened.number);

    let branches = ops.list_branches(&repo()).await.expect("branches");
    let main = branches.iter().find(|b| b.name == "main").expect("main");
    assert_eq!(main.sha, merged.sha, "main is at the merge");
    assert!(main.protected, "main is protected");
    let feature = branches
        .iter()
        .find(|b| b.name == "feature")
        .expect("feature");
    assert_eq!(feature.sha, commit.sha);
}

/// Reads asked twice answer the same, and change nothing.
pub async fn reads_are_idempotent<P: GitProvider>(rig: Rig<P>) {
    setup(&rig.ops).await;
    let first = (
        rig.ops.get_repo(&repo()).await,
        rig.ops.list_branches(&repo()).await,
    );
    let second = (
        rig.ops.get_repo(&repo()).await,
        rig.ops.list_branches(&repo()).await,
    );
    assert_eq!(first, second);
    assert!(first.0.is_ok() && first.1.is_ok());
}

/// Each error kind the provider can produce, from the provider's own answers.
pub async fn errors_say_what_happened<P: GitProvider>(rig: Rig<P>, stranger: Rig<P>) {
    let ops = &rig.ops;
    let missing = RepoRef::new("alice", "nothing-here");
    assert!(matches!(
        ops.get_repo(&missing).await,
        Err(ProviderError::NotFound(_))
    ));
    setup(ops).await;
    assert!(matches!(
        ops.create_repo(&new_repo("widgets")).await,
        Err(ProviderError::Conflict(_))
    ));
    assert!(matches!(
        ops.create_branch(&repo(), &feature()).await,
        Err(ProviderError::Conflict(_))
    ));
    let nowhere = NewBranch {
        name: "other".into(),
        from: "no-such-branch".into(),
    };
    assert!(matches!(
        ops.create_branch(&repo(), &nowhere).await,
        Err(ProviderError::NotFound(_) | ProviderError::Validation(_))
    ));
    let unmerged = ops
        .merge_pull_request(&repo(), &merge(999))
        .await
        .expect_err("no such pull request");
    assert!(
        matches!(unmerged, ProviderError::NotFound(_)),
        "{unmerged:?}"
    );
    // A token the provider does not know.
    let refused = stranger.ops.get_repo(&repo()).await;
    assert!(
        matches!(refused, Err(ProviderError::Permission(_))),
        "{refused:?}"
    );
    // A read whose every attempt meets a 502: the door retries, then gives up; transient.
    rig.arm(
        Method::GET,
        &repo_path(rig.provider),
        Fault::Status(502),
        10,
    );
    let given_up = ops.get_repo(&repo()).await;
    assert!(
        matches!(given_up, Err(ProviderError::Transient(_))),
        "{given_up:?}"
    );
    assert_eq!(
        rig.sent("GET", &repo_path(rig.provider)),
        4,
        "four attempts in all"
    );
}

/// A read meeting a 502 or a lost answer once is retried and succeeds.
pub async fn reads_are_retried<P: GitProvider>(rig: Rig<P>) {
    setup(&rig.ops).await;
    let path = repo_path(rig.provider);
    rig.arm(Method::GET, &path, Fault::Status(502), 1);
    rig.ops
        .get_repo(&repo())
        .await
        .expect("retried after a 502");
    assert_eq!(rig.sent("GET", &path), 2);
    rig.arm(Method::GET, &path, Fault::LoseAnswer, 1);
    rig.ops
        .get_repo(&repo())
        .await
        .expect("retried after a timeout");
    assert_eq!(rig.sent("GET", &path), 4);
}

/// The API path of `alice/widgets`.
pub fn repo_path(provider: Provider) -> String {
    match provider {
        Provider::GitLab => "/projects/alice%2Fwidgets".into(),
        _ => "/repos/alice/widgets".into(),
    }
}

/// The six mutations of the contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mutation {
    CreateRepo,
    CreateBranch,
    ProtectBranch,
    CommitFiles,
    OpenPullRequest,
    MergePullRequest,
}

pub const MUTATIONS: [Mutation; 6] = [
    Mutation::CreateRepo,
    Mutation::CreateBranch,
    Mutation::ProtectBranch,
    Mutation::CommitFiles,
    Mutation::OpenPullRequest,
    Mutation::MergePullRequest,
];

/// The request that applies `m` (GitHub's commit: the ref update that makes it visible).
pub fn target(provider: Provider, m: Mutation) -> (Method, String) {
    let r = repo_path(provider);
    match (provider, m) {
        (Provider::GitLab, Mutation::CreateRepo) => (Method::POST, "/projects".into()),
        (Provider::GitLab, Mutation::CreateBranch) => {
            (Method::POST, format!("{r}/repository/branches"))
        }
        (Provider::GitLab, Mutation::ProtectBranch) => {
            (Method::POST, format!("{r}/protected_branches"))
        }
        (Provider::GitLab, Mutation::CommitFiles) => {
            (Method::POST, format!("{r}/repository/commits"))
        }
        (Provider::GitLab, Mutation::OpenPullRequest) => {
            (Method::POST, format!("{r}/merge_requests"))
        }
        (Provider::GitLab, Mutation::MergePullRequest) => {
            (Method::PUT, format!("{r}/merge_requests/1/merge"))
        }
        (_, Mutation::CreateRepo) => (Method::POST, "/user/repos".into()),
        (_, Mutation::CreateBranch) => (Method::POST, format!("{r}/git/refs")),
        (_, Mutation::ProtectBranch) => (Method::PUT, format!("{r}/branches/main/protection")),
        (_, Mutation::CommitFiles) => (Method::PATCH, format!("{r}/git/refs/heads/feature")),
        (_, Mutation::OpenPullRequest) => (Method::POST, format!("{r}/pulls")),
        (_, Mutation::MergePullRequest) => (Method::PUT, format!("{r}/pulls/1/merge")),
    }
}

/// Sets up what `m` needs, then runs it with its request answered by `fault`; returns the
/// result and how many of its requests the simulator had seen before (during the setup).
async fn prepare_and_run<P: GitProvider>(
    rig: &Rig<P>,
    m: Mutation,
    fault: Fault,
) -> (OpResult<()>, usize) {
    let ops = &rig.ops;
    if m != Mutation::CreateRepo {
        setup(ops).await;
    }
    if m == Mutation::MergePullRequest {
        let opened = ops
            .open_pull_request(&repo(), &pull())
            .await
            .expect("opened");
        assert_eq!(opened.number, 1);
    }
    let (method, path) = target(rig.provider, m);
    let sent_before = rig.sent(method.as_str(), &path);
    let sim_before = rig.at_sim(method.as_str(), &path);
    rig.arm(method.clone(), &path, fault, 10);
    let result = match m {
        Mutation::CreateRepo => ops.create_repo(&new_repo("widgets")).await.map(drop),
        Mutation::CreateBranch => {
            let second = NewBranch {
                name: "second".into(),
                from: "main".into(),
            };
            ops.create_branch(&repo(), &second).await.map(drop)
        }
        Mutation::ProtectBranch => ops.protect_branch(&repo(), &protect_main()).await.map(drop),
        Mutation::CommitFiles => {
            let mut more = two_files("feature");
            for f in &mut more.files {
                f.path = format!("more/{}", f.path);
            }
            ops.commit_files(&repo(), &more).await.map(drop)
        }
        Mutation::OpenPullRequest => ops.open_pull_request(&repo(), &pull()).await.map(drop),
        Mutation::MergePullRequest => ops.merge_pull_request(&repo(), &merge(1)).await.map(drop),
    };
    assert_eq!(
        rig.sent(method.as_str(), &path) - sent_before,
        1,
        "{m:?} sent exactly once"
    );
    (result, sim_before)
}

/// Every mutation against `fault`: one request leaves the exit door (and, when the
/// simulator saw it, one arrives there), and the error says what happened.
pub async fn mutation_is_sent_once<P: GitProvider>(rig: Rig<P>, m: Mutation, fault: Fault) {
    let (result, seen_before) = prepare_and_run(&rig, m, fault).await;
    let (method, path) = target(rig.provider, m);
    let at_sim = rig.at_sim(method.as_str(), &path) - seen_before;
    match fault {
        Fault::Status(429) => {
            assert!(
                matches!(result, Err(ProviderError::RateLimited { .. })),
                "{m:?}: {result:?}"
            );
            assert_eq!(at_sim, 0, "{m:?} answered before the simulator");
        }
        Fault::Status(_) => {
            assert!(
                matches!(result, Err(ProviderError::Ambiguous(_))),
                "{m:?}: {result:?}"
            );
            assert_eq!(at_sim, 0, "{m:?} answered before the simulator");
        }
        Fault::LoseAnswer => {
            assert!(
                matches!(result, Err(ProviderError::Ambiguous(_))),
                "{m:?}: {result:?}"
            );
            assert_eq!(at_sim, 1, "{m:?} applied once at the simulator");
        }
    }
}

/// The re-check after a lost answer: create-repo, create-branch and open-pr find what they
/// made and return it; merge stays ambiguous. The mutation is never sent twice.
pub async fn the_recheck_finds_what_was_made<P: GitProvider>(rig: Rig<P>) {
    let ops = &rig.ops;
    let (m, path) = target(rig.provider, Mutation::CreateRepo);
    rig.arm(m.clone(), &path, Fault::LoseAnswer, 10);
    let found = ops
        .create_repo(&new_repo("widgets"))
        .await
        .expect("re-checked repository");
    assert_eq!(found.repo, repo());
    assert_eq!(rig.sent(m.as_str(), &path), 1);

    let (m, path) = target(rig.provider, Mutation::CreateBranch);
    rig.arm(m.clone(), &path, Fault::LoseAnswer, 10);
    let branch = ops
        .create_branch(&repo(), &feature())
        .await
        .expect("re-checked branch");
    assert_eq!(branch.name, "feature");
    assert_eq!(rig.sent(m.as_str(), &path), 1);

    ops.commit_files(&repo(), &two_files("feature"))
        .await
        .expect("commit");
    let (m, path) = target(rig.provider, Mutation::OpenPullRequest);
    rig.arm(m.clone(), &path, Fault::LoseAnswer, 10);
    let opened = ops
        .open_pull_request(&repo(), &pull())
        .await
        .expect("re-checked pull");
    assert_eq!(
        (opened.head.as_str(), opened.title.as_str()),
        ("feature", "Add the answer")
    );
    assert_eq!(rig.sent(m.as_str(), &path), 1);

    let (m, path) = target(rig.provider, Mutation::MergePullRequest);
    rig.arm(m.clone(), &path, Fault::LoseAnswer, 10);
    let merged = ops.merge_pull_request(&repo(), &merge(opened.number)).await;
    assert!(
        matches!(merged, Err(ProviderError::Ambiguous(_))),
        "{merged:?}"
    );
    assert_eq!(rig.sent(m.as_str(), &path), 1);
}

/// A re-check that finds something else than asked reports the conflict.
pub async fn the_recheck_reports_a_mismatch_as_a_conflict<P: GitProvider>(rig: Rig<P>) {
    setup(&rig.ops).await;
    // `feature` already exists one commit ahead of main; asking for it from main and losing
    // the answer (the provider refused it, unseen) finds a branch elsewhere.
    let (m, path) = target(rig.provider, Mutation::CreateBranch);
    rig.arm(m.clone(), &path, Fault::Status(502), 10);
    let result = rig.ops.create_branch(&repo(), &feature()).await;
    assert!(
        matches!(result, Err(ProviderError::Conflict(_))),
        "{result:?}"
    );
    assert_eq!(
        rig.sent(m.as_str(), &path),
        2,
        "one by setup, one by the test"
    );
}
