//! `sync org` on a quota already spent before its credential's owner is known (issue 36,
//! item 4): `GET /user`, which tells the owner, is itself held back until the window reopens.
//! The run is created all the same — bound to its credential with the owner pending (see
//! `headroom_store::CredentialBinding::owner_pending`) — and persisted as hibernating until
//! the reset the refusal announced, its reason in words on its first stage; a worker (`sync
//! worker`, `headroom run`) wakes it then, learns the owner and binds the run to it, and `sync
//! status` shows it meanwhile. With `--estimate`, the plan probe cannot be sent either: the run
//! goes on without an estimate, which is said.

use headroom_core::clock::{Clock, Timestamp};
use headroom_core::{QuotaKey, Subject};
use headroom_http::Credential;
use headroom_store::{
    CheckpointStatus, CheckpointUpdate, CredentialUsed, NewSyncRun, SyncRunStatus, subject_label,
};
use headroom_sync::{RunSummary, StageGraph};

use super::super::Env;
use super::super::report::{self, Format};
use crate::outcome::{CliError, CommandResult, Outcome};

/// A start of `sync org` the spent quota keeps from learning whose run it is.
pub(in super::super) struct SpentStart<'a> {
    pub(in super::super) name: &'a str,
    pub(in super::super) stages: &'a [String],
    pub(in super::super) credential: &'a Credential,
    /// When the quota reopens (the refusal's reset, or its Retry-After).
    pub(in super::super) until: Timestamp,
    /// `--estimate` was asked for.
    pub(in super::super) estimate: bool,
}

/// The quota key of a run whose owner is pending: it stands for `credential` until the owner
/// is learned.
fn pending_key(env: &Env, credential: &Credential) -> QuotaKey {
    let login = CredentialUsed::pending_login(credential.fingerprint());
    QuotaKey::new(
        env.client.provider(),
        env.client.policy().host(),
        Subject::User(login.into()),
    )
}

/// The unfinished run of `name` created with `credential` while its owner was pending, if
/// any: a later start goes on with it (attaching as to any unfinished run).
pub(super) async fn unfinished(
    env: &Env,
    name: &str,
    stages: &[String],
    credential: Option<&Credential>,
) -> Result<Option<i64>, CliError> {
    match credential {
        Some(c) => super::attach_to_unfinished(env, name, stages, &pending_key(env, c)).await,
        None => Ok(None),
    }
}

/// The run's reason, in words.
fn reason(until: Timestamp) -> String {
    format!(
        "the token's quota is spent; GET /user could not tell its owner — reopens {}",
        until.strftime("%H:%M:%S UTC")
    )
}

/// Creates the owner-pending run (or finds the one an earlier start created), persisted as
/// hibernating until the quota reopens, and says so (exit 0).
pub(in super::super) async fn start(
    env: &Env,
    start: &SpentStart<'_>,
    format: Format,
) -> CommandResult {
    let now = env.clock.now();
    let found = unfinished(env, start.name, start.stages, Some(start.credential)).await?;
    let (id, until) = match found {
        Some(id) => {
            let run = env
                .store
                .sync_run(id)
                .await
                .map_err(|e| CliError::failed(&e))?;
            (id, run.and_then(|r| r.not_before).unwrap_or(start.until))
        }
        None => (create(env, start, now).await?, start.until),
    };
    report::hibernating(
        format,
        id,
        Some((env.kind, start.name)),
        until,
        &reason(until),
        false,
        now,
    );
    if start.estimate {
        report::no_estimate(format, id);
    }
    Ok(Outcome::Success)
}

/// The first stage the run covers: it holds the run's reason while it hibernates.
fn first_stage(kind: super::super::SyncKind, stages: &[String]) -> Result<&'static str, CliError> {
    let graph =
        StageGraph::new(kind.declarations(), kind.source()).map_err(|e| CliError::failed(&e))?;
    let selection: Vec<&'static str> = if stages.is_empty() {
        graph.stages().iter().map(|s| s.name).collect()
    } else {
        graph
            .closure_of(stages)
            .map_err(|e| CliError::refused(&e))?
    };
    selection
        .first()
        .copied()
        .ok_or_else(|| CliError::failed(&"the organization graph has no stage"))
}

async fn create(env: &Env, start: &SpentStart<'_>, now: Timestamp) -> Result<i64, CliError> {
    let failed = |e: headroom_store::StoreError| CliError::failed(&e);
    let stage = first_stage(env.kind, start.stages)?;
    let key = pending_key(env, start.credential);
    let owner = subject_label(&key.subject);
    let mut run = env
        .store
        .create_sync_run(&NewSyncRun {
            kind: env.kind.as_str().into(),
            target: start.name.to_owned(),
            key,
            requested_stages: (!start.stages.is_empty()).then(|| start.stages.to_vec()),
            // Bound to its credential from the start; the owner is learned at its wake.
            credential: Some(CredentialUsed {
                fingerprint: Some(start.credential.fingerprint().to_owned()),
                owner,
            }),
            created_at: now,
        })
        .await
        .map_err(failed)?;
    env.store
        .set_checkpoint(&CheckpointUpdate {
            sync_run_id: run.id,
            stage: stage.to_owned(),
            scope: String::new(),
            status: CheckpointStatus::Deferred,
            page_cursor: None,
            pages_added: 0,
            rows_added: 0,
            detail: Some(reason(start.until)),
            at: now,
        })
        .await
        .map_err(failed)?;
    let mut summary = RunSummary::from_stored(run.summary.as_ref());
    summary.hibernations = 1;
    summary.hibernating_since = Some(now);
    summary.stages_deferred = vec![stage.to_owned()];
    run.summary = Some(serde_json::to_value(&summary).map_err(|e| CliError::failed(&e))?);
    run.status = SyncRunStatus::Hibernating;
    run.not_before = Some(start.until);
    run.updated_at = now;
    env.store.save_sync_run(&run).await.map_err(failed)?;
    Ok(run.id)
}
