//! `headroom sync …`: collections (an organization, a group, a site, a workspace) as graphs of
//! stages chosen by quota headroom.
//! - `sync org NAME [--resume RUN_ID] [--stages LIST] [--wait]` starts (or resumes) a run.
//!   A run is bound to the credential it was created with; a resume with another token of
//!   the same owner needs `--rebind-credential` (recorded in the run), one of another owner
//!   is refused.
//!   A run that must wait for a quota window hibernates: it is persisted with its wake time
//!   and the command exits 0 saying until when — unless `--wait`, which sleeps in this process
//!   and finishes.
//! - Each prints a short text by default and JSON with `--json`; logs go to stderr.
//! - `sync status [RUN_ID] [--json]`: stages, cursors, counts, what a run waits for.
//! - `sync plan org NAME`: an estimate of requests, points and quota windows, from a probe
//!   of a few GraphQL points.
//! - `sync worker [--once]`: wakes hibernating runs when their time comes (as `headroom run`
//!   also does), and takes up pending runs and those whose holder died.
//!
//! Each subcommand has a module of its own; this one holds the arguments, the dispatch and
//! what they share (the store and client, the organization runner, the outcome line).

use std::sync::Arc;

use clap::{Args, Subcommand};
use headroom_core::clock::{SignedDuration, TokioClock};
use headroom_core::telemetry;
use headroom_http::Client;
use headroom_store::Store;
use headroom_sync::{ProgressSink, Runner, RunnerConfig};

use crate::config::{GlobalArgs, ProcessEnv, Settings};
use crate::outcome::{CliError, CommandResult, TokenFor};
use crate::{registry, wiring};

mod gateway;
mod kind;
mod org_run;
mod plan;
mod plan_gitlab;
mod plan_providers;
mod progress;
mod report;
mod settings;
mod status;
mod unresumed;
mod worker;

pub(crate) use gateway::through_gateway;
pub use kind::SyncKind;
use settings::{access, gitlab_settings, jira_settings, launchdarkly_settings, linear_settings};
pub(crate) use settings::{configured_for, provider_settings};
pub use worker::{WorkerMemory, worker_pass};

/// Collections as graphs of stages.
#[derive(Debug, Args)]
pub struct SyncArgs {
    #[command(subcommand)]
    command: SyncCommand,
}

#[derive(Debug, Subcommand)]
enum SyncCommand {
    /// Collect an organization: org, members, teams, repositories, issues, projects, issue
    /// comments, pull requests with commits, commit files, workflow runs/jobs/check runs,
    /// branches. Exits 0 when done, hibernating (with the wake time) or taken up by a worker
    /// (with the way to follow it), 1 when it failed.
    Org {
        /// The organization's login.
        name: String,
        /// Resume this run instead of starting one (done stages are skipped; a running stage
        /// continues from its cursor).
        #[arg(long, value_name = "RUN_ID")]
        resume: Option<i64>,
        /// Only these stages (comma-separated), plus what they depend on.
        #[arg(long, value_delimiter = ',', value_name = "LIST")]
        stages: Vec<String>,
        /// Wait for quota windows in this process and finish, instead of hibernating (or, when
        /// a worker took the run up, follow it to its end).
        #[arg(long)]
        wait: bool,
        /// Before a new run, measure the organization as `sync plan` does (a few GraphQL
        /// points and a REST request per sampled repository) and keep its per-stage,
        /// per-route-family estimate with the run: `sync status` then holds what each stage
        /// spent against it (calibration). Without it every row is unbudgeted.
        #[arg(long)]
        estimate: bool,
        #[command(flatten)]
        rebind: RebindCredential,
        /// A run that hibernates until no later than this many seconds from now is held: the
        /// command keeps it persisted as hibernating (claim released, visible in `sync
        /// status`) and wakes it itself at its time, as a worker would. A later wake time
        /// exits 0 with the run id and the wake time for `sync worker`. 0 never holds.
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(0..=86_400))]
        hold_secs: u64,
        /// Seconds a killed worker keeps its claim on the run before another may resume it
        /// (one killed on the same machine and pid namespace frees it at once).
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        claim_secs: u64,
        #[command(flatten)]
        margin: wiring::ResetMargin,
        /// Print JSON lines for machines instead of text: the run's progress events, its
        /// hibernations, and last its outcome with the whole summary.
        #[arg(long)]
        json: bool,
    },
    /// Collect a GitLab group and its subgroups: projects, merge requests with commits,
    /// approvals and notes, pipelines with jobs, issues with notes, milestones, deployments,
    /// releases, feature flags. The token is GITLAB_TOKEN (or GITLAB_OAUTH_TOKEN, or the
    /// `[gitlab]` section); the API is gitlab.com unless `--api-url https://HOST/api/v4`.
    /// Exits as `sync org` does.
    Gitlab {
        /// The group's full path (`top/sub`) or id.
        group: String,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Collect a Jira Cloud site: projects, issues with their changelogs, comments and (with
    /// --worklogs) worklogs, boards and sprints. The credential is JIRA_EMAIL with
    /// JIRA_API_TOKEN, or JIRA_OAUTH_TOKEN with JIRA_OAUTH_CLIENT_ID, or the `[jira]` section.
    /// Exits as `sync org` does.
    Jira {
        /// The site: https://NAME.atlassian.net, or https://api.atlassian.com/ex/jira/CLOUD_ID
        /// for OAuth and scoped tokens (default: `site` in `[jira]`).
        #[arg(long, value_name = "URL")]
        site: Option<String>,
        /// Only these projects, by key; every project the credential sees when none is named.
        #[arg(value_name = "PROJECT_KEY")]
        projects: Vec<String>,
        /// Only the issues this JQL selects too (joined with AND to each project's query).
        #[arg(long, value_name = "JQL")]
        jql: Option<String>,
        /// Collect each issue's worklogs too (one more request per issue).
        #[arg(long)]
        worklogs: bool,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Collect a Linear workspace: teams and memberships, users, workflow states, labels,
    /// projects, cycles, issues with their history, comments and attachments. The key is
    /// LINEAR_API_KEY (or LINEAR_OAUTH_TOKEN, or the `[linear]` section); the API is
    /// https://api.linear.app unless `--api-url URL`. Exits as `sync org` does.
    Linear {
        /// Only these teams, by key (repeat the flag); every team when none is named.
        #[arg(long = "team", value_name = "KEY")]
        teams: Vec<String>,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Collect a LaunchDarkly account: projects with their environments, flags with their
    /// per-environment state, segments, members, code-reference repositories and the audit
    /// log. The token is LD_ACCESS_TOKEN (or LD_OAUTH_TOKEN, or the `[launchdarkly]`
    /// section); the API is https://app.launchdarkly.com unless `--api-url URL` (the EU and
    /// federal hosts too). A later run reads the audit log's new entries and re-lists the rest
    /// only when they show a change. Exits as `sync org` does.
    #[command(name = "launchdarkly")]
    LaunchDarkly {
        /// Only these projects, by key; every project the token can read when none is named.
        #[arg(value_name = "PROJECT_KEY")]
        projects: Vec<String>,
        /// Re-list projects, flags, segments, members and code references even when the audit
        /// log shows no change since the last completed run.
        #[arg(long)]
        full: bool,
        #[command(flatten)]
        run: RunArgs,
    },
    /// Where a run stands: stages, cursors, counts, what it waits for. Without RUN_ID, the
    /// unfinished runs.
    Status {
        /// The run.
        run_id: Option<i64>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
    },
    /// Before spending anything: estimated requests and points per bucket, and how many quota
    /// windows the work needs (a probe of a few GraphQL points measures the organization).
    Plan {
        #[command(subcommand)]
        target: PlanTarget,
    },
    /// Wake hibernating runs when their time comes, and run pending ones and those a dead
    /// worker left (its claim lapsed). `headroom run` does the same beside the feed.
    Worker {
        /// Process the runs due now, then exit.
        #[arg(long)]
        once: bool,
        /// Seconds between looks at the database.
        #[arg(long, default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..=3600))]
        poll_secs: u64,
        #[command(flatten)]
        rebind: RebindCredential,
        /// Seconds a killed worker keeps its claim on a run before another may resume it
        /// (one killed on the same machine and pid namespace frees it at once).
        #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
        claim_secs: u64,
        #[command(flatten)]
        margin: wiring::ResetMargin,
        /// Print JSON lines for machines instead of text: each run's progress events and
        /// outcome.
        #[arg(long)]
        json: bool,
    },
}

/// How `sync gitlab`, `sync jira` and `sync linear` start, drive and report their run (as
/// `sync org`'s flags of the same names).
#[derive(Debug, Args)]
struct RunArgs {
    /// Resume this run instead of starting one.
    #[arg(long, value_name = "RUN_ID")]
    resume: Option<i64>,
    /// Only these stages (comma-separated), plus what they depend on.
    #[arg(long, value_delimiter = ',', value_name = "LIST")]
    stages: Vec<String>,
    /// Wait for quota windows in this process and finish, instead of hibernating.
    #[arg(long)]
    wait: bool,
    /// Before a new run, measure the target as `sync plan` does and keep its estimate per
    /// stage and route family with the run, for `sync status`'s calibration.
    #[arg(long)]
    estimate: bool,
    #[command(flatten)]
    rebind: RebindCredential,
    /// A run that hibernates until no later than this many seconds from now is held and
    /// woken by this process. 0 never holds.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    hold_secs: u64,
    /// Seconds a killed process keeps its claim on the run before another may resume it.
    #[arg(long, default_value_t = 120, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    claim_secs: u64,
    #[command(flatten)]
    margin: wiring::ResetMargin,
    /// Print JSON lines for machines instead of text.
    #[arg(long)]
    json: bool,
}

impl RunArgs {
    fn options(&self) -> org_run::OrgOptions {
        org_run::OrgOptions {
            wait: self.wait,
            estimate: self.estimate,
            rebind: self.rebind.rebind_credential,
            hold: SignedDuration::from_secs(i64::try_from(self.hold_secs).unwrap_or(i64::MAX)),
            claim_secs: self.claim_secs,
            margin: self.margin.get(),
            format: report::Format::from_flag(self.json),
        }
    }
}

/// Starts or resumes a run of `kind` (Jira's or Linear's) on `target`, its refusals hinted
/// with the provider's own variables.
async fn provider_run(
    settings: &Settings,
    kind: SyncKind,
    target: String,
    run: RunArgs,
) -> CommandResult {
    let options = run.options();
    let source = access(settings, kind).and_then(|a| a.credential_source.clone());
    org_run::sync_org(settings, kind, target, run.resume, run.stages, options)
        .await
        .map_err(|e| e.with_hints(kind.token_for(), || source))
}

/// Whether a run bound to another credential may go on with this process's.
#[derive(Debug, Clone, Args)]
struct RebindCredential {
    /// Go on with a run that was created with another token of the same owner (a rotated
    /// token): the run is rebound to this process's token and the rebind recorded in it. A
    /// token of another owner is refused even so: a run never moves to another quota.
    #[arg(long)]
    rebind_credential: bool,
}

#[derive(Debug, Subcommand)]
enum PlanTarget {
    /// An organization.
    Org {
        /// The organization's login.
        name: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// A GitLab group: a few one-object pages whose `x-total` counts its lists.
    Gitlab {
        /// The group's full path or id.
        group: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// A Jira site: a project search's total, Jira's approximate issue count per project, and
    /// the children of a few sampled issues.
    Jira {
        /// The site (default: `site` in `[jira]`).
        #[arg(long, value_name = "URL")]
        site: Option<String>,
        /// Only these projects, by key.
        #[arg(value_name = "PROJECT_KEY")]
        projects: Vec<String>,
        /// Only the issues this JQL selects too.
        #[arg(long, value_name = "JQL")]
        jql: Option<String>,
        /// Count worklogs too.
        #[arg(long)]
        worklogs: bool,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// A Linear workspace: each team's `issueCount` and the children of a sampled page.
    Linear {
        /// Only these teams, by key (repeat the flag).
        #[arg(long = "team", value_name = "KEY")]
        teams: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// A LaunchDarkly account: its projects and environments, `totalCount`s of sampled flag,
    /// segment and member lists, and the audit log's new pages (a few at most).
    #[command(name = "launchdarkly")]
    LaunchDarkly {
        /// Only these projects, by key.
        #[arg(value_name = "PROJECT_KEY")]
        projects: Vec<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// Runs `headroom sync …`.
pub async fn run(global: &GlobalArgs, args: SyncArgs) -> CommandResult {
    let settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    match args.command {
        SyncCommand::Org {
            name,
            resume,
            stages,
            wait,
            estimate,
            rebind,
            hold_secs,
            claim_secs,
            margin,
            json,
        } => {
            let hold = SignedDuration::from_secs(i64::try_from(hold_secs).unwrap_or(i64::MAX));
            let options = org_run::OrgOptions {
                wait,
                estimate,
                rebind: rebind.rebind_credential,
                hold,
                claim_secs,
                margin: margin.get(),
                format: report::Format::from_flag(json),
            };
            org_run::sync_org(&settings, SyncKind::Org, name, resume, stages, options).await
        }
        SyncCommand::Gitlab { group, run } => {
            let settings = gitlab_settings(global, settings)?;
            let hold = SignedDuration::from_secs(i64::try_from(run.hold_secs).unwrap_or(i64::MAX));
            let options = org_run::OrgOptions {
                wait: run.wait,
                estimate: run.estimate,
                rebind: run.rebind.rebind_credential,
                hold,
                claim_secs: run.claim_secs,
                margin: run.margin.get(),
                format: report::Format::from_flag(run.json),
            };
            let source = settings.providers.gitlab.credential_source.clone();
            org_run::sync_org(
                &settings,
                SyncKind::Gitlab,
                group,
                run.resume,
                run.stages,
                options,
            )
            .await
            .map_err(|e| e.with_hints(TokenFor::GitLab, || source))
        }
        SyncCommand::Jira {
            site,
            projects,
            jql,
            worklogs,
            run,
        } => {
            let settings = jira_settings(global, settings, site.as_deref())?;
            let selection = headroom_jira::sync::Selection {
                projects,
                jql,
                worklogs,
            };
            let target = selection.target();
            // A key Jira could not have is refused before anything is sent.
            headroom_jira::sync::Selection::parse(&target).map_err(|e| CliError::refused(&e))?;
            provider_run(&settings, SyncKind::Jira, target, run).await
        }
        SyncCommand::Linear { teams, run } => {
            let settings = linear_settings(global, settings)?;
            let selection = headroom_linear::sync::Selection { teams };
            let target = selection.target();
            headroom_linear::sync::Selection::parse(&target).map_err(|e| CliError::refused(&e))?;
            provider_run(&settings, SyncKind::Linear, target, run).await
        }
        SyncCommand::LaunchDarkly {
            projects,
            full,
            run,
        } => {
            let settings = launchdarkly_settings(global, settings)?;
            let selection = headroom_launchdarkly::sync::Selection { projects, full };
            let target = selection.target();
            headroom_launchdarkly::sync::Selection::parse(&target)
                .map_err(|e| CliError::refused(&e))?;
            provider_run(&settings, SyncKind::LaunchDarkly, target, run).await
        }
        SyncCommand::Status { run_id, json } => status::status(&settings, run_id, json).await,
        SyncCommand::Plan { target } => plan_target(global, settings, target).await,
        SyncCommand::Worker {
            once,
            poll_secs,
            rebind,
            claim_secs,
            margin,
            json,
        } => {
            let options = worker::WorkerOptions {
                once,
                poll_secs,
                claim_secs,
                rebind: rebind.rebind_credential,
                margin: margin.get(),
                format: report::Format::from_flag(json),
            };
            worker::worker(&settings, options).await
        }
    }
}

/// Runs `headroom sync plan …`.
async fn plan_target(global: &GlobalArgs, settings: Settings, target: PlanTarget) -> CommandResult {
    match target {
        PlanTarget::Org { name, json } => plan::plan(&settings, &name, json).await,
        PlanTarget::Gitlab { group, json } => {
            let settings = gitlab_settings(global, settings)?;
            let source = settings.providers.gitlab.credential_source.clone();
            plan_gitlab::plan(&settings, &group, json)
                .await
                .map_err(|e| e.with_hints(TokenFor::GitLab, || source))
        }
        PlanTarget::Jira {
            site,
            projects,
            jql,
            worklogs,
            json,
        } => {
            let settings = jira_settings(global, settings, site.as_deref())?;
            let target = headroom_jira::sync::Selection {
                projects,
                jql,
                worklogs,
            }
            .target();
            headroom_jira::sync::Selection::parse(&target).map_err(|e| CliError::refused(&e))?;
            let source =
                access(&settings, SyncKind::Jira).and_then(|a| a.credential_source.clone());
            plan_providers::plan(&settings, SyncKind::Jira, &target, json)
                .await
                .map_err(|e| e.with_hints(TokenFor::Jira, || source))
        }
        PlanTarget::Linear { teams, json } => {
            let settings = linear_settings(global, settings)?;
            let target = headroom_linear::sync::Selection { teams }.target();
            headroom_linear::sync::Selection::parse(&target).map_err(|e| CliError::refused(&e))?;
            let source =
                access(&settings, SyncKind::Linear).and_then(|a| a.credential_source.clone());
            plan_providers::plan(&settings, SyncKind::Linear, &target, json)
                .await
                .map_err(|e| e.with_hints(TokenFor::Linear, || source))
        }
        PlanTarget::LaunchDarkly { projects, json } => {
            let settings = launchdarkly_settings(global, settings)?;
            let target = headroom_launchdarkly::sync::Selection {
                projects,
                full: false,
            }
            .target();
            headroom_launchdarkly::sync::Selection::parse(&target)
                .map_err(|e| CliError::refused(&e))?;
            let source =
                access(&settings, SyncKind::LaunchDarkly).and_then(|a| a.credential_source.clone());
            plan_providers::plan(&settings, SyncKind::LaunchDarkly, &target, json)
                .await
                .map_err(|e| e.with_hints(TokenFor::LaunchDarkly, || source))
        }
    }
}

struct Env {
    /// What the command collects.
    kind: SyncKind,
    store: Arc<dyn Store>,
    recorder: Arc<dyn headroom_store::QuotaRecorder>,
    client: Client,
    clock: TokioClock,
    settings: Settings,
    /// When the other configured tokens' owners could not be asked (the quota spent until
    /// then): a run starting after it asks again before it spends anything.
    owners_unchecked: Option<headroom_core::clock::Timestamp>,
}

async fn env(settings: &Settings, margin: SignedDuration, kind: SyncKind) -> Result<Env, CliError> {
    let opened = registry::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let store = headroom_store::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let clock = TokioClock::system();
    let settings = &if kind == SyncKind::Jira {
        gateway::through_gateway(settings, clock, &opened, margin).await?
    } else {
        settings.clone()
    };
    let client = wiring::client_for(settings, clock, &opened, margin, kind.provider())
        .map_err(|e| CliError::refused(&e))?;
    // A spent quota holds back the `GET /user`s that tell the owners (issue 36, item 4): the
    // command goes on (a new run is created hibernating, a worker looks for due runs), and
    // the check is made again when the quota reopens.
    let owners_unchecked = match configured_owners(&client, settings).await {
        Ok(()) => None,
        Err(headroom_sync::IdentityError::Api(headroom_http::ApiError::RateLimited {
            until,
            ..
        })) => {
            if !settings.also_configured.is_empty() {
                tracing::warn!(
                    event = telemetry::SYNC_OWNERS_UNCHECKED,
                    until = %until,
                    "The quota is spent: whether the other configured tokens spend the same \
                     quota is checked once it reopens."
                );
            }
            Some(until)
        }
        Err(e) => return Err(owners_error(e)),
    };
    Ok(Env {
        kind,
        store,
        recorder: opened.sinks.recorder().clone(),
        client,
        clock,
        settings: settings.clone(),
        owners_unchecked,
    })
}

/// Refuses to sync when the tokens configured besides the one used spend another quota
/// (credentials are not capacity); with only one token configured, asks nothing.
pub(crate) async fn one_quota(client: &Client, settings: &Settings) -> Result<(), CliError> {
    configured_owners(client, settings)
        .await
        .map_err(owners_error)
}

/// Several owners are a refusal; an owner that could not be learned, a failure.
fn owners_error(e: headroom_sync::IdentityError) -> CliError {
    match e {
        e @ headroom_sync::IdentityError::SeveralOwners(_) => CliError::refused(&e),
        e => CliError::failed(&e),
    }
}

/// [`one_quota`]'s check, its error as it came.
async fn configured_owners(
    client: &Client,
    settings: &Settings,
) -> Result<(), headroom_sync::IdentityError> {
    if settings.also_configured.is_empty() {
        return Ok(());
    }
    let also: Vec<(&str, &headroom_http::Credential)> = settings
        .also_configured
        .iter()
        .map(|t| (t.source, &t.credential))
        .collect();
    let used = (
        settings.credential_source.unwrap_or("no token"),
        settings.credential.as_ref(),
    );
    headroom_sync::one_identity(client, used, &also)
        .await
        .map(|_| ())
}

fn runner(env: &Env, progress: Arc<dyn ProgressSink>, claim_secs: u64, rebind: bool) -> Runner {
    let runner = kind_runner(
        env.kind,
        env.store.clone(),
        env.client.clone(),
        env.clock,
        &env.settings,
        claim_secs,
    )
    .with_progress(progress);
    if rebind {
        runner.rebinding_credential()
    } else {
        runner
    }
}

/// This process's name in the readings it records.
pub fn holder() -> String {
    format!("headroom:{}", std::process::id())
}

/// The holder name this process claims sync runs under: its [`ProcessMark`], so that once it
/// is gone (killed) the next process on this machine takes its runs over at once rather than
/// after the claim's TTL (the pid alone where the mark cannot be read).
///
/// [`ProcessMark`]: headroom_store::ProcessMark
pub fn claim_holder() -> String {
    static HOLDER: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    HOLDER
        .get_or_init(|| {
            headroom_store::ProcessMark::current().map_or_else(holder, |m| m.to_string())
        })
        .clone()
}

/// The organization graph's runner over an exit door built elsewhere: `headroom run` hands it
/// the feed's client so that both spend through one governor per identity (on SQLite the
/// governor lives in this process's memory, so a second client would not see the first's
/// requests).
pub fn org_runner(
    store: Arc<dyn Store>,
    client: Client,
    clock: TokioClock,
    settings: &Settings,
    claim_secs: u64,
) -> Runner {
    kind_runner(SyncKind::Org, store, client, clock, settings, claim_secs)
}

/// The runner of `kind`'s graph over `client`, which must speak `kind`'s provider.
pub(crate) fn kind_runner(
    kind: SyncKind,
    store: Arc<dyn Store>,
    client: Client,
    clock: TokioClock,
    settings: &Settings,
    claim_secs: u64,
) -> Runner {
    match Runner::new(
        kind.stages(),
        kind.source(),
        store,
        client,
        settings.credential.clone(),
        clock,
        RunnerConfig {
            deferral: settings.deferral,
            caps: settings.sync_caps.clone(),
            holder: claim_holder(),
            claim: SignedDuration::from_secs(i64::try_from(claim_secs).unwrap_or(120)),
            in_flight: settings.in_flight_ceiling,
            ..RunnerConfig::default()
        },
    ) {
        Ok(r) => r,
        // The graph is fixed in code and tested; reaching this is a programming error.
        Err(e) => panic!("the {} graph is invalid: {e}", kind.as_str()),
    }
}
