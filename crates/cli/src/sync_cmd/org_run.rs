//! `sync org NAME`: starts or resumes one organization run and drives it until it finishes,
//! fails or hibernates (holding on through a short or `--wait`ed hibernation). A run a worker
//! took up first (`headroom run`, `sync worker`) is left to it, saying so — or followed to its
//! end with `--wait`; a run whose holder was killed on this machine is taken over at once.

use std::collections::BTreeMap;
use std::io::IsTerminal;
use std::sync::Arc;

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp};
use headroom_core::telemetry;
use headroom_store::{CredentialUsed, NewSyncRun, SyncRun, subject_label};
use headroom_sync::{FamilyEstimate, ProgressSink, RunOutcome, RunSummary, StageGraph};

use self::pending::SpentStart;
use super::progress::{JsonProgress, QuietProgress, TerminalProgress};
use super::report::{self, Format};
use super::{Env, env, plan, runner, unresumed};
use crate::config::Settings;
use crate::outcome::{CliError, CommandResult, Outcome};

mod pending;

/// A new run of `name`, bound to `credential`, with `sync plan`'s estimate when asked.
async fn create_run(
    env: &super::Env,
    name: &str,
    stages: Vec<String>,
    credential: Option<&headroom_http::Credential>,
    estimate: bool,
) -> Result<i64, CliError> {
    // Measured before the run exists, so the run is saved with its estimate right after it
    // is created (a worker taking up pending runs finds it complete).
    let estimates = if estimate {
        Some(estimates(env, name).await?)
    } else {
        None
    };
    let key = env
        .client
        .identity(credential)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let created = env
        .store
        .create_sync_run(&NewSyncRun {
            kind: env.kind.as_str().into(),
            target: name.to_owned(),
            // Bound from the start to the credential it is created with.
            credential: Some(CredentialUsed {
                fingerprint: credential.map(|c| c.fingerprint().to_owned()),
                owner: subject_label(&key.subject),
            }),
            key,
            requested_stages: (!stages.is_empty()).then_some(stages),
            created_at: env.clock.now(),
        })
        .await;
    match (created, estimates) {
        (Ok(run), Some(estimates)) => with_estimate(env, run, estimates).await,
        (Ok(run), None) => Ok(run.id),
        (Err(e), _) => Err(CliError::failed(&e)),
    }
}

/// A second start of the same organization on the same quota identity (issue 20, defect 7):
/// the run not yet finished is continued — the same run, never a second one spending the
/// quota again — unless another process holds it now or it was asked for other stages, which
/// is refused, naming it.
async fn attach_to_unfinished(
    env: &super::Env,
    name: &str,
    stages: &[String],
    key: &QuotaKey,
) -> Result<Option<i64>, CliError> {
    let Some(run) = env
        .store
        .unfinished_sync_run(env.kind.as_str(), name, key)
        .await
        .map_err(|e| CliError::failed(&e))?
    else {
        return Ok(None);
    };
    if held_by_another(env, &run) {
        return Err(CliError::refused(&format!(
            "sync run {} of {} {name} for {key} is running in another process (claimed by {} \
             until {}); it is not synced twice on one quota: wait for it, or see \
             `headroom sync status {}`",
            run.id,
            env.kind.noun(),
            run.claimed_by.as_deref().unwrap_or("another worker"),
            run.claim_expires_at
                .map_or_else(String::new, |t| t.to_string()),
            run.id
        )));
    }
    let asked: Option<Vec<String>> = (!stages.is_empty()).then(|| stages.to_vec());
    if run.requested_stages != asked {
        return Err(CliError::refused(&format!(
            "sync run {} of {} {name} for {key} is not finished and was asked for other stages; \
             continue it with `{} --resume {}`, or let it finish first",
            run.id,
            env.kind.noun(),
            env.kind.invocation(name),
            run.id
        )));
    }
    tracing::info!(
        event = telemetry::SYNC_RUN_ATTACHED,
        run_id = run.id,
        status = run.status.as_str()
    );
    Ok(Some(run.id))
}

/// Whether another live process drives `run` now: it is running under a claim that has not
/// lapsed, of a holder that is not provably gone (a killed process of this machine).
fn held_by_another(env: &Env, run: &SyncRun) -> bool {
    run.status == headroom_store::SyncRunStatus::Running && claimed(env, run)
}

/// Whether `run`'s claim holds: it has not lapsed, and its holder is not provably gone.
fn claimed(env: &Env, run: &SyncRun) -> bool {
    run.claimed_by
        .as_deref()
        .is_some_and(|holder| !headroom_store::ProcessMark::holder_is_gone(holder))
        && run
            .claim_expires_at
            .is_some_and(|until| until > env.clock.now())
}

/// How often `sync org --wait` looks at a run another worker drives.
const FOLLOW_EVERY: SignedDuration = SignedDuration::from_secs(1);

/// Run `id` is claimed by another worker. Without `--wait`: says so, with the way to follow
/// it, and ends (exit 0). With it: follows the run until it finishes (its outcome, the exit
/// code a run of this process would have had), or until nobody drives it any more (`None`:
/// this process goes on with it itself).
async fn taken_over(
    env: &Env,
    name: &str,
    id: i64,
    wait: bool,
    format: Format,
) -> Result<Option<Outcome>, CliError> {
    let run = env
        .store
        .sync_run(id)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let claimed_by = run.as_ref().and_then(|r| r.claimed_by.clone());
    report::taken_over(format, id, env.kind, name, claimed_by.as_deref(), wait);
    if !wait {
        return Ok(Some(Outcome::Success));
    }
    loop {
        env.clock.sleep(FOLLOW_EVERY).await;
        let Some(run) = env
            .store
            .sync_run(id)
            .await
            .map_err(|e| CliError::failed(&e))?
        else {
            return Err(CliError::failed(&format!("sync run {id} is gone")));
        };
        let summary = RunSummary::from_stored(run.summary.as_ref());
        match run.status {
            headroom_store::SyncRunStatus::Done => {
                report::outcome(format, id, "done", None, &summary);
                return Ok(Some(Outcome::Success));
            }
            headroom_store::SyncRunStatus::Failed => {
                let reason = run.failure_reason.as_deref().unwrap_or_default();
                report::outcome(format, id, "failed", Some(reason), &summary);
                return Ok(Some(Outcome::Unsuccessful));
            }
            _ if claimed(env, &run) => {}
            // Hibernating, or its worker gone: this process takes it up again.
            _ => return Ok(None),
        }
    }
}

/// How `sync org` drives its run.
pub(super) struct OrgOptions {
    pub(super) wait: bool,
    pub(super) estimate: bool,
    pub(super) rebind: bool,
    pub(super) hold: SignedDuration,
    pub(super) claim_secs: u64,
    pub(super) margin: SignedDuration,
    pub(super) format: Format,
}

pub(super) async fn sync_org(
    settings: &Settings,
    kind: super::SyncKind,
    name: String,
    resume: Option<i64>,
    stages: Vec<String>,
    options: OrgOptions,
) -> CommandResult {
    let OrgOptions {
        wait,
        estimate,
        rebind,
        hold,
        claim_secs,
        margin,
        format,
    } = options;
    let graph =
        StageGraph::new(kind.declarations(), kind.source()).map_err(|e| CliError::failed(&e))?;
    if let Err(e) = graph.closure_of(&stages) {
        return Err(CliError::refused(&format!("--stages: {e}")));
    }
    let env = env(settings, margin, kind).await?;
    let credential = settings.credential.as_ref();
    let id = match resume {
        Some(id) => resumable(&env, id, &name).await?,
        None => {
            // `--wait` waits as long as it takes; otherwise no longer than the hold.
            let patience = if wait { SignedDuration::MAX } else { hold };
            let key = match owner_known(&env, &name, credential, patience, format).await? {
                Owner::Known(key) => key,
                Owner::Spent { until, credential } => {
                    let run = SpentStart {
                        name: &name,
                        stages: &stages,
                        credential,
                        until,
                        estimate,
                    };
                    return pending::start(&env, &run, format).await;
                }
            };
            if env.owners_unchecked.is_some() {
                // The other configured tokens could not be asked for their owners while the
                // quota was spent; now it is open again, before anything is spent.
                super::one_quota(&env.client, settings).await?;
            }
            match attach_to_unfinished(&env, &name, &stages, &key).await? {
                Some(id) => id,
                // One created while the owner was not known yet is this same run.
                None => match pending::unfinished(&env, &name, &stages, credential).await? {
                    Some(id) => id,
                    None => create_run(&env, &name, stages, credential, estimate).await?,
                },
            }
        }
    };
    let estimated = estimated_units(&env, id).await;
    let runner = runner(
        &env,
        progress_sink(format, &graph, estimated),
        claim_secs,
        rebind,
    );
    loop {
        match runner.run(id).await {
            Ok(RunOutcome::Done { summary }) => {
                report::outcome(format, id, "done", None, &summary);
                return Ok(Outcome::Success);
            }
            Ok(RunOutcome::Failed { reason, summary }) => {
                report::outcome(format, id, "failed", Some(&reason), &summary);
                return Ok(Outcome::Unsuccessful);
            }
            Ok(RunOutcome::Hibernating { until, reason }) => {
                // The run is persisted and unclaimed either way; holding only means this
                // process is the worker that wakes it. Killed meanwhile, it loses nothing.
                let reason = with_token_source(&reason, settings, kind, &name, id);
                let now = env.clock.now();
                let held = wait || until.duration_since(now) <= hold;
                report::hibernating(format, id, Some((kind, &name)), until, &reason, held, now);
                if held {
                    env.clock.sleep_until(until).await;
                    continue;
                }
                return Ok(Outcome::Success);
            }
            // A worker took the run (a pending run this process had just created, or one it
            // held while it hibernated): it is in good hands. `--wait` follows it to its end.
            Err(headroom_sync::SyncError::Claimed(_)) => {
                if let Some(outcome) = taken_over(&env, &name, id, wait, format).await? {
                    return Ok(outcome);
                }
            }
            // Another credential than the run's: a refusal, which names what to do, and
            // whether anything else resumes the run it leaves waiting.
            Err(headroom_sync::SyncError::Credential(e)) => {
                return Err(CliError::refused(&refusal_with_hint(&env, id, &e).await));
            }
            // The database went away mid-run: nothing was lost, and the operator needs the
            // way back.
            Err(e @ headroom_sync::SyncError::Store(_)) => {
                return Err(CliError::failed(&format!(
                    "{e}; the run's checkpoints are intact: resume it with \
                     `{} --resume {id}` once the database answers (or let a worker take \
                     it)",
                    kind.invocation(&name)
                )));
            }
            Err(e) => return Err(CliError::failed(&e)),
        }
    }
}

/// `--resume ID`: the run, when it collects this command's kind and target.
async fn resumable(env: &Env, id: i64, name: &str) -> Result<i64, CliError> {
    match env.store.sync_run(id).await {
        Ok(Some(run)) if run.kind == env.kind.as_str() && run.target == name => Ok(id),
        Ok(Some(run)) => Err(CliError::refused(&format!(
            "--resume: run {id} syncs {} {}, not {} {name}",
            run.kind,
            run.target,
            env.kind.as_str()
        ))),
        Ok(None) => Err(CliError::refused(&format!("--resume: no sync run {id}"))),
        Err(e) => Err(CliError::failed(&e)),
    }
}

/// A hibernation because the provider refused the token (401) names where the token came
/// from and how to go on: a new token of the same owner, with the rebind recorded.
fn with_token_source(
    reason: &str,
    settings: &Settings,
    kind: super::SyncKind,
    name: &str,
    id: i64,
) -> String {
    if !reason.contains(headroom_http::TOKEN_REFUSED) {
        return reason.to_owned();
    }
    let source = match super::access(settings, kind) {
        Some(access) => access.credential_source.clone(),
        None => crate::outcome::token_source(settings),
    };
    let came = source.map_or_else(String::new, |s| format!(" (the token came from {s})"));
    format!(
        "{reason}{came}; it expired or was revoked: resume with a new token of the same owner, \
         `{} --resume {id} --rebind-credential`",
        kind.invocation(name)
    )
}

/// A credential refusal, with what it leaves the run at and the command that resumes it
/// (issue 36, item 2): the run stays waiting, and nothing this process runs will take it.
async fn refusal_with_hint(
    env: &Env,
    id: i64,
    refusal: &headroom_sync::CredentialRefusal,
) -> String {
    let Ok(Some(run)) = env.store.sync_run(id).await else {
        return refusal.to_string();
    };
    let hint = unresumed::refused(&run, refusal);
    format!(
        "{refusal}\n  sync run {id} stays {}: this process cannot resume it — {}\n  resume it \
         with {}",
        run.status.as_str(),
        hint.why,
        hint.command
    )
}

/// Where a run's progress goes: JSON lines, bars on a terminal, or nothing when piped (the
/// hibernations and the summary say it all).
fn progress_sink(
    format: Format,
    graph: &StageGraph,
    estimated: Option<u64>,
) -> Arc<dyn ProgressSink> {
    match format {
        Format::Json => Arc::new(JsonProgress),
        Format::Text if std::io::stderr().is_terminal() => {
            Arc::new(TerminalProgress::new(graph.clone(), estimated))
        }
        Format::Text => Arc::new(QuietProgress),
    }
}

/// The units (REST requests and GraphQL points) the run's stored estimate (`--estimate`)
/// expects it to spend in all; `None` for a run started without one.
async fn estimated_units(env: &Env, id: i64) -> Option<u64> {
    let run = env.store.sync_run(id).await.ok()??;
    let summary: headroom_sync::RunSummary = serde_json::from_value(run.summary?).ok()?;
    let units: u64 = summary.estimates.values().flatten().map(|f| f.units).sum();
    (units > 0).then_some(units)
}

/// Whose quota a new run spends.
enum Owner<'a> {
    /// The credential's owner, known.
    Known(QuotaKey),
    /// Not known: the quota is spent until `until`, and `GET /user`, which tells the owner,
    /// is held back until then.
    Spent {
        until: Timestamp,
        credential: &'a headroom_http::Credential,
    },
}

/// Whether the credential's owner — whose quota the run spends, and by whom it is keyed — is
/// known. On a fresh database with the quota spent, the `GET /user` that tells it is held back
/// until the window reopens (issue 36, item 4): this process waits for it when it may wait
/// (`--wait`, or a wait within `patience`, the hold); otherwise [`Owner::Spent`].
async fn owner_known<'a>(
    env: &Env,
    name: &str,
    credential: Option<&'a headroom_http::Credential>,
    patience: SignedDuration,
    format: Format,
) -> Result<Owner<'a>, CliError> {
    loop {
        match env.client.identity(credential).await {
            Ok(key) => return Ok(Owner::Known(key)),
            Err(headroom_http::ApiError::RateLimited { until, .. }) => {
                let now = env.clock.now();
                match credential {
                    // Without a credential nothing is asked; a credential it is.
                    Some(credential) if until.duration_since(now) > patience => {
                        return Ok(Owner::Spent { until, credential });
                    }
                    _ => {}
                }
                report::start_waits(format, name, until, now);
                env.clock.sleep_until(until).await;
            }
            Err(e) => return Err(CliError::failed(&e)),
        }
    }
}

/// Measures the organization (`sync plan`'s probe): the model's estimate per stage and route
/// family.
async fn estimates(
    env: &Env,
    name: &str,
) -> Result<BTreeMap<String, Vec<FamilyEstimate>>, CliError> {
    let mut out: BTreeMap<String, Vec<FamilyEstimate>> = BTreeMap::new();
    if matches!(
        env.kind,
        super::SyncKind::Jira | super::SyncKind::Linear | super::SyncKind::LaunchDarkly
    ) {
        let measured = super::plan_providers::measure(env, name).await?;
        for row in &measured.rows {
            out.entry(row.stage.to_owned())
                .or_default()
                .push(FamilyEstimate {
                    family: row.family.name.to_owned(),
                    dimension: row.family.dimension,
                    units: super::plan_providers::Measured::units(row),
                });
        }
        return Ok(out);
    }
    if env.kind == super::SyncKind::Gitlab {
        let measured = super::plan_gitlab::measure(env, name).await?;
        for e in &measured.plan.by_family {
            out.entry(e.stage.to_owned())
                .or_default()
                .push(FamilyEstimate {
                    family: e.family.name.to_owned(),
                    dimension: e.family.dimension,
                    units: e.units,
                });
        }
        return Ok(out);
    }
    let measured = plan::measure(env, name).await?;
    for e in &measured.plan.by_family {
        out.entry(e.stage.to_owned())
            .or_default()
            .push(FamilyEstimate {
                family: e.family.name.to_owned(),
                dimension: e.family.dimension,
                units: e.units,
            });
    }
    Ok(out)
}

/// Stores the estimate in the new run's summary before any stage is dispatched; the run's
/// calibration holds the stages' actuals against it. Returns the run id.
async fn with_estimate(
    env: &Env,
    mut run: SyncRun,
    estimates: BTreeMap<String, Vec<FamilyEstimate>>,
) -> Result<i64, CliError> {
    let mut summary = RunSummary::from_stored(run.summary.as_ref());
    summary.estimates = estimates;
    run.summary = Some(serde_json::to_value(&summary).map_err(|e| CliError::failed(&e))?);
    env.store
        .save_sync_run(&run)
        .await
        .map_err(|e| CliError::failed(&e))?;
    Ok(run.id)
}
