//! "Meet the real GitHub": every request the provider operations send to GitHub, and every
//! answer they read, checked against GitHub's REST description (the vendored subset of
//! `@octokit/openapi`): the operation exists, its JSON request body matches the operation's
//! `requestBody` schema, and the response matches the schema declared for its status.

#![allow(clippy::expect_used, clippy::unwrap_used)]

#[path = "../../sim/tests/openapi/mod.rs"]
mod openapi;

use std::sync::{Arc, Mutex};

use bytes::Bytes;
use headroom_core::clock::{Timestamp, TokioClock};
use headroom_core::governor::{BoxFuture, GovernorConfig};
use headroom_core::provider::{
    CommitFiles, FileChange, FileContent, FileMode, GitProvider, MergeMethod, MergePullRequest,
    NewBranch, NewPullRequest, NewRepository, ProtectionRule, RepoRef,
};
use headroom_core::{Governor, Subject};
use headroom_github::ops::GitHubOps;
use headroom_http::sinks::{CredentialRegistry, MemoryCredentials};
use headroom_http::transport::{SimTransport, Transport, TransportError};
use headroom_http::{Client, ClientParts, Credential, UrlPolicy};
use headroom_sim::{SimConfig, Simulator, TokenSpec};
use serde_json::Value;

const API: &str = "http://127.0.0.1:7000";
const TOKEN: &str = "ghp_opsdescriptiontoken00000000000000001";

/// One exchange: method, path, request body, status, response body.
type Exchange = (String, String, Bytes, u16, Bytes);

#[derive(Debug)]
struct Recording {
    inner: SimTransport,
    exchanges: Mutex<Vec<Exchange>>,
}

impl Transport for Recording {
    fn send(
        &self,
        request: http::Request<Bytes>,
    ) -> BoxFuture<'_, Result<http::Response<Bytes>, TransportError>> {
        Box::pin(async move {
            let method = request.method().as_str().to_ascii_lowercase();
            let path = request.uri().path().to_owned();
            let body = request.body().clone();
            let response = self.inner.send(request).await?;
            self.exchanges.lock().unwrap().push((
                method,
                path,
                body,
                response.status().as_u16(),
                response.body().clone(),
            ));
            Ok(response)
        })
    }
}

/// The description's path template a concrete path belongs to: literal segments must match,
/// `{x}` takes one segment, a trailing `{ref}` or `{path}` the rest; the most literal wins.
fn template(ops: &[openapi::Op], method: &str, path: &str) -> Option<String> {
    let concrete: Vec<&str> = path.trim_start_matches('/').split('/').collect();
    let mut best: Option<(usize, String)> = None;
    for (m, t) in ops {
        if m != method {
            continue;
        }
        let parts: Vec<&str> = t.trim_start_matches('/').split('/').collect();
        let last_greedy = matches!(parts.last(), Some(&"{ref}") | Some(&"{path}"));
        let fits = if last_greedy {
            concrete.len() >= parts.len()
        } else {
            concrete.len() == parts.len()
        };
        if !fits {
            continue;
        }
        let literal_ok = parts
            .iter()
            .zip(&concrete)
            .all(|(p, c)| p.starts_with('{') || p == c);
        if literal_ok {
            let literals = parts.iter().filter(|p| !p.starts_with('{')).count();
            if best.as_ref().is_none_or(|(n, _)| literals > *n) {
                best = Some((literals, t.clone()));
            }
        }
    }
    best.map(|(_, t)| t)
}

async fn run_every_operation() -> Vec<Exchange> {
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
    let transport = Arc::new(Recording {
        inner: SimTransport::new(sim),
        exchanges: Mutex::new(Vec::new()),
    });
    let mut parts = ClientParts::new(
        UrlPolicy::for_api_url(API).expect("loopback"),
        governor,
        transport.clone(),
        clock,
    );
    parts.credentials = credentials;
    let ops = GitHubOps::new(Client::new(parts), Some(Credential::new(TOKEN)));
    let repo = RepoRef::new("alice", "described");
    let new = NewRepository {
        name: "described".into(),
        owner: None,
        description: Some("checked against the description".into()),
        private: true,
        initialize: true,
    };
    ops.create_repo(&new).await.expect("repository");
    ops.get_repo(&repo).await.expect("read");
    let branch = NewBranch {
        name: "feature".into(),
        from: "main".into(),
    };
    ops.create_branch(&repo, &branch).await.expect("branch");
    let files = vec![
        FileChange {
            path: "a.txt".into(),
            content: Some(FileContent::Text("a\n".into())),
            mode: FileMode::Regular,
            exists: false,
        },
        FileChange {
            path: "tool".into(),
            content: Some(FileContent::Binary(vec![0, 159, 146, 150])),
            mode: FileMode::Executable,
            exists: false,
        },
    ];
    let commit = CommitFiles {
        branch: "feature".into(),
        message: "two files".into(),
        files,
    };
    ops.commit_files(&repo, &commit).await.expect("commit");
    let rule = ProtectionRule {
        branch: "main".into(),
        require_pull_request: false,
        required_approvals: 0,
        allow_force_push: false,
    };
    ops.protect_branch(&repo, &rule).await.expect("protected");
    let pull = NewPullRequest {
        title: "Two files".into(),
        head: "feature".into(),
        base: "main".into(),
        body: Some("described".into()),
    };
    let opened = ops.open_pull_request(&repo, &pull).await.expect("opened");
    let merge = MergePullRequest {
        number: opened.number,
        method: MergeMethod::Squash,
        commit_message: Some("Squashed".into()),
        expected_head_sha: None,
    };
    ops.merge_pull_request(&repo, &merge).await.expect("merged");
    ops.list_branches(&repo).await.expect("branches");
    transport.exchanges.lock().unwrap().clone()
}

#[tokio::test(start_paused = true)]
async fn every_request_and_answer_of_the_operations_matches_githubs_description() {
    let description = openapi::Description::load();
    let operations = description.operations();
    let exchanges = run_every_operation().await;
    assert!(exchanges.len() >= 12, "{} exchanges", exchanges.len());
    let mut problems = Vec::new();
    for (method, path, request_body, status, response_body) in &exchanges {
        let Some(t) = template(&operations, method, path) else {
            problems.push(format!(
                "{method} {path}: not an operation of the description"
            ));
            continue;
        };
        if !request_body.is_empty() {
            let schema = description.doc()["paths"][t.as_str()][method.as_str()]
                .pointer("/requestBody/content/application~1json/schema")
                .cloned();
            match schema {
                None => problems.push(format!(
                    "{method} {t}: sends a body the operation has no schema for"
                )),
                Some(schema) => {
                    let body: Value = serde_json::from_slice(request_body).expect("JSON body");
                    let validator = description.validator(&schema);
                    for e in validator.iter_errors(&body) {
                        problems.push(format!(
                            "{method} {t} request at {}: {e}",
                            e.instance_path().as_str()
                        ));
                    }
                }
            }
        }
        if let Err(e) = description.check(method, &t, *status, response_body) {
            problems.push(format!("{method} {t} {status} response: {e}"));
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // The check bites: a body the description forbids is caught.
    let schema = description.doc()["paths"]["/user/repos"]["post"]
        .pointer("/requestBody/content/application~1json/schema")
        .cloned()
        .expect("create-repo body schema");
    assert!(
        !description
            .validator(&schema)
            .is_valid(&serde_json::json!({"name": 5}))
    );
}
