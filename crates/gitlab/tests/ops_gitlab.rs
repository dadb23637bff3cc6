//! GitLab's own side of the provider contract against the in-process simulator: whose quota
//! a token spends (`GET /user`'s `username`), the headers that go out (GitLab's, never
//! GitHub's), a read's in-place wait after a 429, and the refusals GitLab's state produces (a
//! push to a protected branch, a merge conflict, a create over an existing file).

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::Subject;
use headroom_core::clock::{Clock, Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, Governor, GovernorConfig};
use headroom_core::provider::{
    CommitFiles, FileChange, FileContent, FileMode, GitProvider, MergeMethod, MergePullRequest,
    NewBranch, NewPullRequest, NewRepository, ProtectionRule, ProviderError, RepoRef,
};
use headroom_core::signal::Provider;
use headroom_gitlab::GitLabOps;
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::{SimTransport, Transport, TransportError};
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::{SimConfig, Simulator, TokenSpec};

const TOKEN: &str = "glpat-opsgitlabtoken0000000000001";

/// Records each request's method, path and headers; answers the next `fail` GETs of
/// `fail_path` with a 429 carrying `Retry-After: retry_after` while its `RateLimit-*` headers
/// still show room (GitLab's application limits answer so).
#[derive(Debug)]
struct Recording {
    inner: SimTransport,
    seen: Mutex<Vec<(String, String, http::HeaderMap)>>,
    fail: Mutex<(String, u32, u64)>,
}

impl Transport for Recording {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            let path = request.uri().path().to_owned();
            self.seen.lock().unwrap().push((
                request.method().to_string(),
                path.clone(),
                request.headers().clone(),
            ));
            let refuse = {
                let mut fail = self.fail.lock().unwrap();
                let hit = request.method() == http::Method::GET && fail.0 == path && fail.1 > 0;
                if hit {
                    fail.1 -= 1;
                }
                hit.then_some(fail.2)
            };
            if let Some(retry_after) = refuse {
                let response = http::Response::builder()
                    .status(429)
                    .header("content-type", "text/plain")
                    .header("retry-after", retry_after.to_string())
                    .header("ratelimit-name", "throttle_authenticated_api")
                    .header("ratelimit-limit", "2000")
                    // An application limit: the headers still show room.
                    .header("ratelimit-remaining", "1500")
                    .body(Bytes::from_static(b"Retry later"))
                    .unwrap();
                return Ok(response);
            }
            self.inner.send(request).await
        })
    }
}

struct Rig {
    ops: GitLabOps,
    transport: Arc<Recording>,
    credentials: Arc<MemoryCredentials>,
    clock: TokioClock,
}

fn rig() -> Rig {
    rig_with(|c| c)
}

fn rig_with(configure: impl FnOnce(SimConfig) -> SimConfig) -> Rig {
    rig_governed(configure, GovernorConfig::default())
}

fn rig_governed(configure: impl FnOnce(SimConfig) -> SimConfig, governing: GovernorConfig) -> Rig {
    let clock = TokioClock::anchored_at(Timestamp::from_second(1_800_000_000).expect("valid"));
    let config = configure(
        SimConfig::default()
            .with_token(TokenSpec::user(TOKEN, "alice"))
            .with_token(TokenSpec::user("glpat-bob", "bob")),
    );
    let sim = Simulator::new(config, clock).expect("simulator");
    let governor = Governor::in_memory(governing, Arc::new(clock)).expect("governor");
    let transport = Arc::new(Recording {
        inner: SimTransport::new(sim),
        seen: Mutex::new(Vec::new()),
        fail: Mutex::new((String::new(), 0, 0)),
    });
    let credentials = Arc::new(MemoryCredentials::default());
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url("http://127.0.0.1:7000/api/v4").expect("loopback"),
        governor,
        transport.clone(),
        clock,
    );
    parts.credentials = credentials.clone();
    parts.config.provider = Provider::GitLab;
    parts.config.api_version = None;
    parts.config.jitter_seed = Some(2);
    Rig {
        ops: GitLabOps::new(Client::new(parts), Some(Credential::new(TOKEN))),
        transport,
        credentials,
        clock,
    }
}

/// A new project `name`, public, without a README.
fn bare_project(name: &str) -> NewRepository {
    NewRepository {
        name: name.into(),
        owner: None,
        description: None,
        private: false,
        initialize: false,
    }
}

/// How many `POST /projects` reached the simulator.
fn project_posts(rig: &Rig) -> usize {
    rig.transport
        .seen
        .lock()
        .unwrap()
        .iter()
        .filter(|(m, p, _)| m == "POST" && p == "/api/v4/projects")
        .count()
}

/// Creates projects `one` and `two`: as many as the limit tests allow in a minute.
async fn create_two_projects(rig: &Rig) {
    for name in ["one", "two"] {
        rig.ops.create_repo(&bare_project(name)).await.expect(name);
    }
}

fn widgets() -> RepoRef {
    RepoRef::new("alice", "widgets")
}

async fn create(ops: &GitLabOps) {
    ops.create_repo(&NewRepository {
        name: "widgets".into(),
        owner: None,
        description: None,
        private: false,
        initialize: true,
    })
    .await
    .expect("project");
}

fn file(path: &str, text: &str, exists: bool) -> FileChange {
    FileChange {
        path: path.into(),
        content: Some(FileContent::Text(text.into())),
        mode: FileMode::Regular,
        exists,
    }
}

fn commit(branch: &str, files: Vec<FileChange>) -> CommitFiles {
    CommitFiles {
        branch: branch.into(),
        message: format!("change {branch}"),
        files,
    }
}

#[tokio::test(start_paused = true)]
async fn the_quota_is_the_usernames_and_only_gitlab_headers_go_out() {
    let rig = rig();
    create(&rig.ops).await;
    let seen = rig.transport.seen.lock().unwrap().clone();
    assert_eq!(
        (seen[0].0.as_str(), seen[0].1.as_str()),
        ("GET", "/api/v4/user"),
        "the owner is discovered first"
    );
    for (method, path, headers) in &seen {
        assert_eq!(
            headers.get("private-token").expect("token"),
            TOKEN,
            "{method} {path}"
        );
        assert!(headers.get("authorization").is_none());
        assert!(headers.get("x-github-api-version").is_none());
        assert_eq!(headers.get("accept").expect("accept"), "application/json");
    }
    let owner = rig
        .credentials
        .lookup("127.0.0.1", Credential::new(TOKEN).fingerprint())
        .await;
    assert_eq!(owner, Some(Subject::User("alice".into())));
}

#[tokio::test(start_paused = true)]
async fn a_read_answered_429_waits_what_gitlab_says_in_place_then_succeeds() {
    let rig = rig();
    create(&rig.ops).await;
    let path = "/api/v4/projects/alice%2Fwidgets".to_owned();
    *rig.transport.fail.lock().unwrap() = (path.clone(), 1, 7);
    let before = rig.clock.now();
    rig.ops
        .get_repo(&widgets())
        .await
        .expect("retried after the wait");
    let waited = rig.clock.now().duration_since(before);
    assert!(waited.as_secs() >= 7, "waited {waited:?}");
    let gets = |seen: &[(String, String, http::HeaderMap)]| {
        seen.iter()
            .filter(|(m, p, _)| m == "GET" && *p == path)
            .count()
    };
    assert_eq!(gets(&rig.transport.seen.lock().unwrap()), 2);

    // A wait past the in-place cap is a deferral, not a retry.
    *rig.transport.fail.lock().unwrap() = (path.clone(), 1, 3_600);
    let deferred = rig.ops.get_repo(&widgets()).await;
    assert!(
        matches!(deferred, Err(ProviderError::RateLimited { .. })),
        "{deferred:?}"
    );
    assert_eq!(gets(&rig.transport.seen.lock().unwrap()), 3);
}

#[tokio::test(start_paused = true)]
async fn gitlabs_refusals_say_what_happened() {
    let rig = rig();
    let ops = &rig.ops;
    create(ops).await;
    // A create over a file that exists.
    let over = ops
        .commit_files(
            &widgets(),
            &commit("main", vec![file("README.md", "again", false)]),
        )
        .await;
    assert!(matches!(over, Err(ProviderError::Conflict(_))), "{over:?}");
    // Two merge requests changing the same file: the second cannot merge.
    for name in ["one", "two"] {
        let branch = NewBranch {
            name: name.into(),
            from: "main".into(),
        };
        ops.create_branch(&widgets(), &branch)
            .await
            .expect("branch");
        let change = file("shared.txt", name, false);
        ops.commit_files(&widgets(), &commit(name, vec![change]))
            .await
            .expect("commit");
    }
    let mut numbers = Vec::new();
    for name in ["one", "two"] {
        let new = NewPullRequest {
            title: format!("{name} changes"),
            head: name.into(),
            base: "main".into(),
            body: None,
        };
        numbers.push(
            ops.open_pull_request(&widgets(), &new)
                .await
                .expect("opened")
                .number,
        );
    }
    let again = NewPullRequest {
        title: "again".into(),
        head: "one".into(),
        base: "main".into(),
        body: None,
    };
    assert!(matches!(
        ops.open_pull_request(&widgets(), &again).await,
        Err(ProviderError::Conflict(_))
    ));
    let merge = |number| MergePullRequest {
        number,
        method: MergeMethod::Merge,
        commit_message: None,
        expected_head_sha: None,
    };
    ops.merge_pull_request(&widgets(), &merge(numbers[0]))
        .await
        .expect("the first merges");
    let second = ops.merge_pull_request(&widgets(), &merge(numbers[1])).await;
    assert!(
        matches!(second, Err(ProviderError::Conflict(_))),
        "{second:?}"
    );
    // Nobody may push to a branch protected for pull requests only.
    let rule = ProtectionRule {
        branch: "main".into(),
        require_pull_request: true,
        required_approvals: 0,
        allow_force_push: false,
    };
    let applied = ops
        .protect_branch(&widgets(), &rule)
        .await
        .expect("protected");
    assert!(applied.require_pull_request);
    let pushed = ops
        .commit_files(
            &widgets(),
            &commit("main", vec![file("direct.txt", "x", false)]),
        )
        .await;
    assert!(
        matches!(pushed, Err(ProviderError::Permission(_))),
        "{pushed:?}"
    );
    assert!(matches!(
        ops.protect_branch(&widgets(), &rule).await,
        Err(ProviderError::Conflict(_))
    ));
    // Approvals are not a branch protection setting on GitLab: refused before sending.
    let approvals = ProtectionRule {
        required_approvals: 1,
        ..rule
    };
    assert!(matches!(
        ops.protect_branch(&widgets(), &approvals).await,
        Err(ProviderError::Validation(_))
    ));
}

#[tokio::test(start_paused = true)]
async fn a_self_managed_instance_without_rate_limit_headers_serves_every_operation() {
    let rig = rig_with(SimConfig::with_gitlab_self_managed);
    let ops = &rig.ops;
    create(ops).await;
    let branch = NewBranch {
        name: "feature".into(),
        from: "main".into(),
    };
    ops.create_branch(&widgets(), &branch)
        .await
        .expect("branch");
    ops.commit_files(
        &widgets(),
        &commit("feature", vec![file("a.txt", "a", false)]),
    )
    .await
    .expect("commit");
    let new = NewPullRequest {
        title: "a".into(),
        head: "feature".into(),
        base: "main".into(),
        body: None,
    };
    let opened = ops
        .open_pull_request(&widgets(), &new)
        .await
        .expect("opened");
    let merge = MergePullRequest {
        number: opened.number,
        method: MergeMethod::Squash,
        commit_message: None,
        expected_head_sha: None,
    };
    ops.merge_pull_request(&widgets(), &merge)
        .await
        .expect("merged");
    assert_eq!(
        ops.list_branches(&widgets()).await.expect("branches").len(),
        2
    );
}

#[tokio::test(start_paused = true)]
async fn the_project_creation_limit_is_a_rate_limit_and_the_creation_is_sent_once() {
    let rig = rig_with(|mut c| {
        c.gitlab_project_creations_per_minute = 2;
        c
    });
    create_two_projects(&rig).await;
    let third = rig.ops.create_repo(&bare_project("three")).await;
    assert!(
        matches!(third, Err(ProviderError::RateLimited { .. })),
        "{third:?}"
    );
    assert_eq!(project_posts(&rig), 3, "the refused creation went out once");
}

/// GitLab's application limits are counted by the governor, so the request that would meet
/// one is deferred here, unsent, instead of being answered 429: with the governor's
/// project-creation count at the instance's own (2 a minute), the third creation comes back
/// rate limited without a POST, and goes through once the minute has passed.
#[tokio::test(start_paused = true)]
async fn the_governor_paces_gitlabs_application_limits_before_gitlab_refuses() {
    use headroom_core::AppLimit;
    use headroom_core::clock::SignedDuration;
    use headroom_core::governor::{AppLimitRate, PointsLimit};
    let governing = GovernorConfig {
        app_limits: vec![AppLimitRate {
            limit: AppLimit::GitlabProjectCreate,
            rate: PointsLimit::per_minute(2),
        }],
        ..GovernorConfig::default()
    };
    let rig = rig_governed(
        |mut c| {
            c.gitlab_project_creations_per_minute = 2;
            c
        },
        governing,
    );
    create_two_projects(&rig).await;
    let third = rig.ops.create_repo(&bare_project("three")).await;
    let Err(ProviderError::RateLimited { until, .. }) = &third else {
        panic!("expected the governor's deferral, got {third:?}");
    };
    assert_eq!(project_posts(&rig), 2, "the deferred creation was not sent");
    let wait = until.duration_since(rig.clock.now());
    assert!(
        wait > SignedDuration::ZERO && wait <= SignedDuration::from_secs(61),
        "{wait:?}"
    );
    rig.clock.sleep(wait).await;
    let made = rig
        .ops
        .create_repo(&bare_project("three"))
        .await
        .expect("after the minute");
    assert_eq!(made.repo.name, "three");
    assert_eq!(
        project_posts(&rig),
        3,
        "each creation sent once, none refused"
    );
}

#[tokio::test(start_paused = true)]
async fn a_symlink_is_refused_on_gitlab_before_anything_is_sent() {
    let rig = rig();
    let commit = CommitFiles {
        branch: "main".into(),
        message: "a link".into(),
        files: vec![FileChange {
            path: "docs/leak".into(),
            content: Some(FileContent::Text("/etc/passwd".into())),
            mode: FileMode::Symlink,
            exists: false,
        }],
    };
    let refused = rig.ops.commit_files(&widgets(), &commit).await;
    assert!(
        matches!(&refused, Err(ProviderError::Validation(m))
            if m.contains("\"docs/leak\"") && m.contains("symbolic link")),
        "{refused:?}"
    );
    assert!(rig.transport.seen.lock().unwrap().is_empty());
}

#[tokio::test(start_paused = true)]
async fn a_gitlab_name_never_escapes_its_path_segment() {
    let rig = rig();
    let escaping = NewBranch {
        name: "x".into(),
        from: "main/../../../../../projects".into(),
    };
    assert!(matches!(
        rig.ops.create_branch(&widgets(), &escaping).await,
        Err(ProviderError::Validation(_))
    ));
    for repo in [
        RepoRef::new("alice/..", "widgets"),
        RepoRef::new("alice", ".."),
        RepoRef::new("../../user", "x"),
        RepoRef::new("alice", "w?x"),
    ] {
        let got = rig.ops.get_repo(&repo).await;
        assert!(
            matches!(got, Err(ProviderError::Validation(_))),
            "{repo:?}: {got:?}"
        );
    }
    let commit = CommitFiles {
        branch: "main".into(),
        message: "m".into(),
        files: vec![FileChange {
            path: "../outside".into(),
            content: None,
            mode: FileMode::Regular,
            exists: true,
        }],
    };
    assert!(matches!(
        rig.ops.commit_files(&widgets(), &commit).await,
        Err(ProviderError::Validation(_))
    ));
    assert!(rig.transport.seen.lock().unwrap().is_empty());
}
