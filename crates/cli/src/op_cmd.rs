//! `headroom op …`: the eight provider operations of the Git provider contract, on GitHub or
//! GitLab, through the same exit door, governor and store as every other command.
//!
//! Exit codes: 0 done; 1 the provider said no or the outcome is unknown (its kind in words:
//! "not found: …"; `--json` gives its code: `not_found`, `conflict`, `permission`,
//! `rate_limited`, `validation`, `transient`, `ambiguous`); 2 refused before sending anything (bad arguments or settings, and any name
//! the provider would refuse, checked by headroom-core's `provider::names`). `files` reads
//! commit-files' inputs from disk and standard input.

use std::path::PathBuf;

use clap::{Args, Subcommand, ValueEnum};
use headroom_core::clock::TokioClock;
use headroom_core::governor::GovernorConfig;
use headroom_core::provider::names::Host;
use headroom_core::provider::{
    CommitFiles, FileChange, FileMode, GitProvider, MergeMethod, MergePullRequest, NewBranch,
    NewPullRequest, NewRepository, ProtectionRule, ProviderError, Recheck, RepoRef,
};
use headroom_core::signal::Provider;
use headroom_core::telemetry;
use headroom_github::ops::GitHubOps;
use headroom_gitlab::GitLabOps;
use headroom_http::{Credential, UrlPolicy};
use serde_json::{Value, json};

use crate::config::{GlobalArgs, ProcessEnv, Settings};
use crate::outcome::{CliError, CommandResult, Outcome, TokenFor};
use crate::{registry, wiring};

mod files;

/// Which Git host the API URL belongs to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum ProviderArg {
    /// GitHub or GitHub Enterprise Server (REST v3).
    Github,
    /// GitLab.com or a self-managed GitLab (REST v4, `https://HOST/api/v4`).
    Gitlab,
}

/// Provider operations. Their options go before or after the operation's name, as in `gh`
/// (`op get-repo OWNER/NAME --json`).
#[derive(Debug, Args)]
pub struct OpArgs {
    /// The provider (default: GitLab when the API URL's path ends in /api/v4, else GitHub).
    #[arg(long, value_enum, global = true)]
    provider: Option<ProviderArg>,
    /// Print JSON instead of text.
    #[arg(long, global = true)]
    json: bool,
    /// After an ambiguous failure of create-repo, create-branch or open-pr, look for what it
    /// would have created and return it when it matches (never a second send).
    #[arg(long, global = true)]
    recheck: bool,
    #[command(subcommand)]
    command: OpCommand,
}

#[derive(Debug, Subcommand)]
enum OpCommand {
    /// One repository (OWNER/NAME).
    GetRepo { repo: String },
    /// Every branch of a repository.
    ListBranches { repo: String },
    /// Create a repository for the token's user, or in --owner (GitHub: an organization;
    /// GitLab: a namespace id).
    CreateRepo {
        name: String,
        #[arg(long)]
        owner: Option<String>,
        #[arg(long)]
        description: Option<String>,
        #[arg(long)]
        private: bool,
        /// Create it empty, without a first commit (no default branch yet).
        #[arg(long)]
        empty: bool,
    },
    /// Create a branch from another.
    CreateBranch {
        repo: String,
        name: String,
        #[arg(long)]
        from: String,
    },
    /// Protect a branch.
    ProtectBranch {
        repo: String,
        branch: String,
        /// Changes land through pull requests only.
        #[arg(long)]
        require_pull_request: bool,
        /// Approvals a pull request needs (GitHub).
        #[arg(long, default_value_t = 0)]
        approvals: u32,
        #[arg(long)]
        allow_force_push: bool,
    },
    /// One commit of several files: each PATH is read from disk and written at the same path
    /// in the repository (executable files keep their mode); --stdin-as PATH writes standard
    /// input at PATH.
    ///
    /// Only regular files are read, each at most 100 MiB (GitHub's limit for one file).
    /// Standard input has the same bound. A symbolic link is committed as a link to its
    /// target, as `git add` does. It is never followed. GitLab cannot commit a link: it is
    /// refused there. Refused before anything is sent (exit 2): a directory reached through
    /// a link; a FIFO, socket or device; a path that is absolute, has an empty, `.`, `..` or
    /// `.git` component, or has a name that is not UTF-8; a branch name Git would refuse.
    CommitFiles {
        repo: String,
        #[arg(long)]
        branch: String,
        #[arg(long)]
        message: String,
        /// Files or symbolic links, relative to the current directory.
        paths: Vec<PathBuf>,
        /// Write standard input at this repository path.
        #[arg(long)]
        stdin_as: Option<String>,
        /// The files exist already (GitLab tells an update from a create).
        #[arg(long)]
        update: bool,
        /// Delete these repository paths in the same commit.
        #[arg(long)]
        delete: Vec<String>,
    },
    /// Open a pull request (GitLab: merge request).
    OpenPr {
        repo: String,
        #[arg(long)]
        head: String,
        #[arg(long)]
        base: String,
        #[arg(long)]
        title: String,
        #[arg(long)]
        body: Option<String>,
    },
    /// Merge a pull request (GitLab: the merge request's iid).
    MergePr {
        repo: String,
        number: u64,
        #[arg(long, value_enum, default_value_t = MethodArg::Merge)]
        method: MethodArg,
        /// Merge only if the head is still this commit.
        #[arg(long)]
        sha: Option<String>,
        #[arg(long)]
        message: Option<String>,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum MethodArg {
    Merge,
    Squash,
    Rebase,
}

/// An operation with its inputs read and checked: nothing can refuse it any more.
#[derive(Debug)]
enum Prepared {
    GetRepo(RepoRef),
    ListBranches(RepoRef),
    CreateRepo(NewRepository),
    CreateBranch(RepoRef, NewBranch),
    ProtectBranch(RepoRef, ProtectionRule),
    CommitFiles(RepoRef, CommitFiles),
    OpenPr(RepoRef, NewPullRequest),
    MergePr(RepoRef, MergePullRequest),
}

impl Prepared {
    /// The subcommand's name, for the log.
    fn name(&self) -> &'static str {
        match self {
            Prepared::GetRepo(_) => "get-repo",
            Prepared::ListBranches(_) => "list-branches",
            Prepared::CreateRepo(_) => "create-repo",
            Prepared::CreateBranch(..) => "create-branch",
            Prepared::ProtectBranch(..) => "protect-branch",
            Prepared::CommitFiles(..) => "commit-files",
            Prepared::OpenPr(..) => "open-pr",
            Prepared::MergePr(..) => "merge-pr",
        }
    }
}

/// Runs `headroom op …`.
pub async fn run(global: &GlobalArgs, args: OpArgs) -> CommandResult {
    let mut settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    let provider = match args.provider {
        Some(ProviderArg::Github) => Provider::GitHub,
        Some(ProviderArg::Gitlab) => Provider::GitLab,
        None if api_url_flag(global) => provider_of(settings.policy.base().path()),
        None => Provider::GitHub,
    };
    let access = access_for(provider, global, &settings);
    settings.policy = access.policy;
    let (credential, source) = (access.credential, access.source);
    let prepared = prepare(args.command, &mut std::io::stdin().lock())?;
    let host = match provider {
        Provider::GitLab => Host::GitLab,
        _ => Host::GitHub,
    };
    check(host, &prepared)?;
    let opened = registry::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let margin = GovernorConfig::default().margin;
    let client = wiring::client_for(&settings, TokioClock::system(), &opened, margin, provider)
        .map_err(|e| CliError::refused(&e))?;
    let door = client.clone();
    let operation = prepared.name();
    let recheck = if args.recheck {
        Recheck::AfterAmbiguous
    } else {
        Recheck::Never
    };
    let result = match provider {
        Provider::GitLab => {
            let ops = GitLabOps::new(client, credential.clone()).with_recheck(recheck);
            perform(&ops, prepared).await
        }
        _ => {
            let ops = GitHubOps::new(client, credential.clone()).with_recheck(recheck);
            perform(&ops, prepared).await
        }
    };
    let outcome = result.as_ref().map_or_else(ProviderError::kind, |_| "ok");
    record(&door, provider, operation, outcome, credential.as_ref()).await;
    let token = match provider {
        Provider::GitLab => TokenFor::GitLab,
        _ => TokenFor::GitHub,
    };
    report(result, args.json).map_err(|e| e.with_hints(token, || source))
}

/// Whether `--api-url` was given as a flag (clap merges it with `GITHUB_API_URL`).
fn api_url_flag(global: &GlobalArgs) -> bool {
    global.api_url.is_some() && !global.env_sourced.api_url
}

/// Where an operation goes and with which credential.
pub(crate) struct Access {
    pub(crate) policy: UrlPolicy,
    pub(crate) credential: Option<Credential>,
    /// Where the credential comes from, in words.
    pub(crate) source: Option<String>,
}

/// The API and credential of `provider` for this command. The flags `--api-url` and
/// `--token-file` apply to the command's provider; otherwise GitHub gets the global settings
/// (`GITHUB_API_URL`, `GITHUB_TOKEN`, …) and GitLab its own (`[gitlab]`, `GITLAB_TOKEN`,
/// `GITLAB_OAUTH_TOKEN`, else gitlab.com): one provider's settings never reach another's host.
pub(crate) fn access_for(provider: Provider, global: &GlobalArgs, settings: &Settings) -> Access {
    let global_access = |policy: UrlPolicy| Access {
        policy,
        credential: settings.credential.clone(),
        source: crate::outcome::token_source(settings),
    };
    let gitlab = &settings.providers.gitlab;
    let policy = match (provider, &gitlab.policy) {
        (Provider::GitLab, Some(policy)) if !api_url_flag(global) => policy.clone(),
        _ => settings.policy.clone(),
    };
    if provider != Provider::GitLab || global.token_file.is_some() {
        return global_access(policy);
    }
    Access {
        policy,
        credential: gitlab.credential.clone(),
        source: gitlab.credential_source.clone(),
    }
}

/// Logs the operation with the credential it spent: the fingerprint (never the token) and
/// the quota identity it resolved to (`headroom op` keeps no row of its own, so the log line
/// is its record). The owner is known by then from the operation's own requests; when it is
/// not (the operation failed before any), it is logged as unknown rather than asked for.
async fn record(
    door: &headroom_http::Client,
    provider: Provider,
    operation: &'static str,
    outcome: &'static str,
    credential: Option<&Credential>,
) {
    let host = door.policy().host().to_owned();
    let owner = match credential {
        Some(c) => door
            .credentials()
            .lookup(&host, c.fingerprint())
            .await
            .map(|s| headroom_store::subject_label(&s)),
        None => door
            .identity(None)
            .await
            .ok()
            .map(|k| headroom_store::subject_label(&k.subject)),
    };
    tracing::info!(
        event = telemetry::PROVIDER_OPERATION,
        provider = headroom_store::provider_name(provider),
        operation,
        outcome,
        fingerprint = credential.map(Credential::fingerprint),
        owner = owner.as_deref().unwrap_or("unknown"),
    );
}

/// GitLab when the API URL's path ends in `/api/v4`.
fn provider_of(base_path: &str) -> Provider {
    if base_path.trim_end_matches('/').ends_with("/api/v4") {
        Provider::GitLab
    } else {
        Provider::GitHub
    }
}

/// The names the provider would refuse, refused before anything is sent (exit 2): the same
/// checks each provider's operations make.
fn check(host: Host, prepared: &Prepared) -> Result<(), CliError> {
    let checked = match prepared {
        Prepared::GetRepo(repo) | Prepared::ListBranches(repo) | Prepared::MergePr(repo, _) => {
            host.repo(repo)
        }
        Prepared::CreateRepo(new) => host.new_repository(new),
        Prepared::CreateBranch(repo, new) => host.repo(repo).and_then(|()| host.new_branch(new)),
        Prepared::ProtectBranch(repo, rule) => host.repo(repo).and_then(|()| host.protection(rule)),
        Prepared::CommitFiles(repo, commit) => host.repo(repo).and_then(|()| host.commit(commit)),
        Prepared::OpenPr(repo, new) => host.repo(repo).and_then(|()| host.pull_request(new)),
    };
    checked.map_err(|e| CliError::refused(&e))
}

fn repo_ref(text: &str) -> Result<RepoRef, CliError> {
    RepoRef::parse(text).ok_or_else(|| CliError::Refused(format!("`{text}` is not OWNER/NAME")))
}

/// Reads and checks the inputs; every problem here is a refusal (exit 2).
fn prepare(command: OpCommand, stdin: &mut dyn std::io::Read) -> Result<Prepared, CliError> {
    Ok(match command {
        OpCommand::GetRepo { repo } => Prepared::GetRepo(repo_ref(&repo)?),
        OpCommand::ListBranches { repo } => Prepared::ListBranches(repo_ref(&repo)?),
        OpCommand::CreateRepo {
            name,
            owner,
            description,
            private,
            empty,
        } => Prepared::CreateRepo(NewRepository {
            name,
            owner,
            description,
            private,
            initialize: !empty,
        }),
        OpCommand::CreateBranch { repo, name, from } => {
            Prepared::CreateBranch(repo_ref(&repo)?, NewBranch { name, from })
        }
        OpCommand::ProtectBranch {
            repo,
            branch,
            require_pull_request,
            approvals,
            allow_force_push,
        } => Prepared::ProtectBranch(
            repo_ref(&repo)?,
            ProtectionRule {
                branch,
                require_pull_request,
                required_approvals: approvals,
                allow_force_push,
            },
        ),
        OpCommand::CommitFiles {
            repo,
            branch,
            message,
            paths,
            stdin_as,
            update,
            delete,
        } => {
            for path in &delete {
                files::checked_repository_path(path)?;
            }
            let mut files = Vec::new();
            for path in &paths {
                files.push(files::from_disk(path, update)?);
            }
            if let Some(target) = stdin_as {
                files.push(files::from_stdin(target, stdin, update)?);
            }
            files.extend(delete.into_iter().map(|path| FileChange {
                path,
                content: None,
                mode: FileMode::Regular,
                exists: true,
            }));
            if files.is_empty() {
                return Err(CliError::Refused(
                    "commit-files needs at least one PATH, --stdin-as or --delete".into(),
                ));
            }
            Prepared::CommitFiles(
                repo_ref(&repo)?,
                CommitFiles {
                    branch,
                    message,
                    files,
                },
            )
        }
        OpCommand::OpenPr {
            repo,
            head,
            base,
            title,
            body,
        } => Prepared::OpenPr(
            repo_ref(&repo)?,
            NewPullRequest {
                title,
                head,
                base,
                body,
            },
        ),
        OpCommand::MergePr {
            repo,
            number,
            method,
            sha,
            message,
        } => Prepared::MergePr(
            repo_ref(&repo)?,
            MergePullRequest {
                number,
                method: match method {
                    MethodArg::Merge => MergeMethod::Merge,
                    MethodArg::Squash => MergeMethod::Squash,
                    MethodArg::Rebase => MergeMethod::Rebase,
                },
                commit_message: message,
                expected_head_sha: sha,
            },
        ),
    })
}

/// Performs the operation; its answer as JSON.
async fn perform<P: GitProvider>(ops: &P, prepared: Prepared) -> Result<Value, ProviderError> {
    fn to_json<T: serde::Serialize>(value: T) -> Result<Value, ProviderError> {
        serde_json::to_value(value).map_err(|e| ProviderError::Transient(e.to_string()))
    }
    match prepared {
        Prepared::GetRepo(repo) => to_json(ops.get_repo(&repo).await?),
        Prepared::ListBranches(repo) => to_json(ops.list_branches(&repo).await?),
        Prepared::CreateRepo(new) => to_json(ops.create_repo(&new).await?),
        Prepared::CreateBranch(repo, new) => to_json(ops.create_branch(&repo, &new).await?),
        Prepared::ProtectBranch(repo, rule) => to_json(ops.protect_branch(&repo, &rule).await?),
        Prepared::CommitFiles(repo, commit) => to_json(ops.commit_files(&repo, &commit).await?),
        Prepared::OpenPr(repo, new) => to_json(ops.open_pull_request(&repo, &new).await?),
        Prepared::MergePr(repo, merge) => to_json(ops.merge_pull_request(&repo, &merge).await?),
    }
}

/// Prints the answer or the error: 0 done, 1 failed with its kind.
fn report(result: Result<Value, ProviderError>, json: bool) -> CommandResult {
    match (result, json) {
        (Ok(value), true) => {
            outln!("{}", json!({ "ok": true, "result": value }));
            Ok(Outcome::Success)
        }
        (Ok(value), false) => {
            let text = serde_json::to_string_pretty(&value).map_err(|e| CliError::failed(&e))?;
            outln!("{text}");
            Ok(Outcome::Success)
        }
        (Err(error), true) => {
            let until = match &error {
                ProviderError::RateLimited { until } => Some(until.to_string()),
                _ => None,
            };
            outln!(
                "{}",
                json!({ "ok": false, "error": { "kind": error.kind(), "message": headroom_core::redact(&error.to_string()), "until": until } })
            );
            Ok(Outcome::Unsuccessful)
        }
        // The error's words already say its kind ("not found: …"); `--json` has the code.
        (Err(error), false) => Err(CliError::failed(&error)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Environment;
    use headroom_core::provider::FileContent;

    struct Env(Vec<(&'static str, &'static str)>);
    impl Environment for Env {
        fn var(&self, name: &str) -> Option<String> {
            self.0
                .iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    #[test]
    fn the_provider_follows_the_api_url_path() {
        assert_eq!(provider_of("/api/v4/"), Provider::GitLab);
        assert_eq!(provider_of("/gitlab/api/v4"), Provider::GitLab);
        assert_eq!(provider_of("/"), Provider::GitHub);
        assert_eq!(provider_of("/api/v3/"), Provider::GitHub);
    }

    fn access(provider: Provider, global: &GlobalArgs, env: &Env) -> Access {
        let settings = global.resolve(env).expect("settings");
        access_for(provider, global, &settings)
    }

    fn fingerprint(access: &Access) -> Option<String> {
        access
            .credential
            .as_ref()
            .map(|c| c.fingerprint().to_owned())
    }

    #[test]
    fn a_github_token_from_the_environment_never_goes_to_gitlab() {
        let global = GlobalArgs::default();
        let env = Env(vec![("GITHUB_TOKEN", "ghp_fromenv")]);
        assert_eq!(fingerprint(&access(Provider::GitLab, &global, &env)), None);
        let both = Env(vec![
            ("GITHUB_TOKEN", "ghp_fromenv"),
            ("GITLAB_TOKEN", "glpat-x"),
        ]);
        let gitlab = access(Provider::GitLab, &global, &both);
        assert_eq!(
            fingerprint(&gitlab),
            Some(Credential::new("glpat-x").fingerprint().to_owned())
        );
        assert_eq!(
            gitlab.source.as_deref(),
            Some("environment variable GITLAB_TOKEN")
        );
        let github = access(Provider::GitHub, &global, &both);
        assert_eq!(
            fingerprint(&github),
            Some(Credential::new("ghp_fromenv").fingerprint().to_owned())
        );
    }

    /// Defect: `op --provider gitlab` without `--api-url` went to GitHub's API (or to
    /// `GITHUB_API_URL`'s host) with the GitLab token. GitLab's base is its own: `[gitlab]`,
    /// else gitlab.com; GitHub's URL variable never applies to it, the flag does.
    #[test]
    fn gitlab_operations_go_to_gitlab_not_to_githubs_api_url() {
        let env = Env(vec![
            ("GITHUB_API_URL", "https://github.example.com/api/v3"),
            ("GITLAB_TOKEN", "glpat-x"),
        ]);
        let from_env = GlobalArgs {
            api_url: Some("https://github.example.com/api/v3".into()),
            env_sourced: crate::config::EnvSourced {
                api_url: true,
                ..Default::default()
            },
            ..GlobalArgs::default()
        };
        let gitlab = access(Provider::GitLab, &from_env, &env);
        assert_eq!(gitlab.policy.base().as_str(), "https://gitlab.com/api/v4/");
        let github = access(Provider::GitHub, &from_env, &env);
        assert_eq!(github.policy.host(), "github.example.com");
        let flag = GlobalArgs {
            api_url: Some("https://gitlab.example.com/api/v4".into()),
            ..GlobalArgs::default()
        };
        let gitlab = access(Provider::GitLab, &flag, &env);
        assert_eq!(gitlab.policy.host(), "gitlab.example.com");
    }

    #[test]
    fn commit_files_reads_stdin_and_refuses_nothing_to_commit() {
        let command = OpCommand::CommitFiles {
            repo: "alice/widgets".into(),
            branch: "main".into(),
            message: "m".into(),
            paths: Vec::new(),
            stdin_as: Some("notes.txt".into()),
            update: false,
            delete: Vec::new(),
        };
        let mut input: &[u8] = b"hello\n";
        match prepare(command, &mut input) {
            Ok(Prepared::CommitFiles(_, commit)) => {
                assert_eq!(commit.files[0].path, "notes.txt");
                assert_eq!(
                    commit.files[0].content,
                    Some(FileContent::Text("hello\n".into()))
                );
            }
            other => panic!("{other:?}"),
        }
        let empty = OpCommand::CommitFiles {
            repo: "alice/widgets".into(),
            branch: "main".into(),
            message: "m".into(),
            paths: Vec::new(),
            stdin_as: None,
            update: false,
            delete: Vec::new(),
        };
        assert!(matches!(
            prepare(empty, &mut &b""[..]),
            Err(CliError::Refused(_))
        ));
        let bad = OpCommand::GetRepo {
            repo: "nothing".into(),
        };
        assert!(matches!(
            prepare(bad, &mut &b""[..]),
            Err(CliError::Refused(_))
        ));
    }
}
