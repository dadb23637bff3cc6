//! Who resumes a run, as the terminal says it (issue 36, item 2): a run bound to a credential
//! no live process holds would otherwise look like an ordinary wait forever. `sync status`,
//! `sync org`'s exit and `sync worker` (and `headroom run`'s worker, in a log line) say when
//! this process's credential cannot resume a run, why, and the command that will; `sync
//! status` also says when no live process resumes it at all, from the server's pure
//! [`resume::who_resumes`].

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_server::status::resume::{self, ResumeFacts, Resumer, Unresumed};
use headroom_store::{QuotaHistory, SyncRun, SyncRunStatus};
use headroom_sync::CredentialRefusal;
use serde::Serialize;

/// Why a credential does not resume a run, and the command that will.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hint {
    /// Why, in words.
    pub why: String,
    /// The command that resumes it.
    pub command: String,
}

/// `headroom sync KIND TARGET --resume ID`, as the run was started.
fn resume_command(run: &SyncRun) -> String {
    match super::SyncKind::named(&run.kind) {
        Some(kind) => format!("{} --resume {}", kind.invocation(&run.target), run.id),
        None => format!(
            "headroom sync {} {} --resume {}",
            run.kind, run.target, run.id
        ),
    }
}

/// An owner label without its kind: `user:alice` → `alice`.
fn who(owner: &str) -> &str {
    owner.split_once(':').map_or(owner, |(_, o)| o)
}

/// A fingerprint as said.
fn shown(fingerprint: Option<&str>) -> &str {
    fingerprint.unwrap_or("none (unauthenticated)")
}

/// Whether `run` still waits to be taken up (not finished, nobody live holds it).
fn waiting(run: &SyncRun, now: Timestamp) -> bool {
    !matches!(run.status, SyncRunStatus::Done | SyncRunStatus::Failed) && !resume::claimed(run, now)
}

/// Why `me` — this process's credential — cannot resume `run`, and the command that will;
/// `None` when it can, or when the run is finished or held by a live process. `me.owner` is
/// empty when the owner of this process's credential is not known yet.
pub fn mine(run: &SyncRun, me: &Resumer, now: Timestamp) -> Option<Hint> {
    if !waiting(run, now) {
        return None;
    }
    let resume = resume_command(run);
    let bound = run.credential.fingerprint.as_deref();
    let yours = shown(me.fingerprint.as_deref());
    if let Some(pending) = run.credential.owner_pending() {
        return (me.fingerprint.as_deref() != Some(pending) || me.host != run.host).then(|| Hint {
            why: format!(
                "this run was created with credential {pending} while its owner could not be \
                 learned (the quota was spent); yours is {yours}: only credential {pending} \
                 resumes it (its owner is learned then)"
            ),
            command: format!("`{resume}` with credential {pending}"),
        });
    }
    if resume::takes(me, run) {
        return None;
    }
    let owner = run.credential.owner.as_deref().unwrap_or(&run.subject);
    let whose = who(owner);
    let (why, command) = if me.host != run.host {
        (
            format!(
                "this run spends {whose}'s quota on {}; this process is configured for {}",
                run.host, me.host
            ),
            format!(
                "`{resume}` against {} with credential {}",
                run.host,
                shown(bound)
            ),
        )
    } else if me.owner.is_empty() {
        (
            format!(
                "this run is bound to credential {} of {whose}; yours is {yours}, whose owner \
                 is not known yet (no request has told it)",
                shown(bound)
            ),
            format!(
                "`{resume}` with credential {}, or `{resume} --rebind-credential` with \
                 another token of {whose}",
                shown(bound)
            ),
        )
    } else if me.owner == owner {
        (
            format!(
                "this run is bound to credential {}; yours is {yours} of the same owner \
                 ({whose})",
                shown(bound)
            ),
            format!("`{resume} --rebind-credential` (the rebind is recorded in the run)"),
        )
    } else {
        (
            format!(
                "this run spends {whose}'s quota; your credential {yours} spends {}'s, and a \
                 run never moves to another quota",
                who(&me.owner)
            ),
            format!(
                "`{resume}` with credential {} (or a token of {whose})",
                shown(bound)
            ),
        )
    };
    Some(Hint { why, command })
}

/// Why a worker was refused `run` (its [`CredentialRefusal`]) in words, and the command that
/// resumes it: for `sync worker`'s skip line, `headroom run`'s log and `sync org`'s exit.
pub fn refused(run: &SyncRun, refusal: &CredentialRefusal) -> Hint {
    let resume = resume_command(run);
    match refusal {
        CredentialRefusal::OtherCredential {
            bound,
            presented,
            owner,
            ..
        } => Hint {
            why: format!(
                "it is bound to credential {bound}; this process holds credential {presented} \
                 of the same owner ({}) without --rebind-credential",
                who(owner)
            ),
            command: format!(
                "`{resume} --rebind-credential` with credential {presented} (or `headroom sync \
                 worker --rebind-credential`; the rebind is recorded in the run), or \
                 `{resume}` with credential {bound}"
            ),
        },
        CredentialRefusal::OtherOwner {
            run_identity,
            presented,
            presented_identity,
            ..
        } => Hint {
            why: format!(
                "it spends the quota of {run_identity}; this process's credential {presented} \
                 spends {presented_identity}, and a run never moves to another quota"
            ),
            command: format!("`{resume}` with a credential of {run_identity}"),
        },
        CredentialRefusal::OwnerPending {
            bound, presented, ..
        } => Hint {
            why: format!(
                "it was created with credential {bound} while its owner could not be learned \
                 (the quota was spent); this process holds credential {presented}"
            ),
            command: format!("`{resume}` with credential {bound}"),
        },
    }
}

/// How long a process's quota reading counts it as live (the dashboard's window).
const LIVE_WINDOW: SignedDuration = SignedDuration::from_secs(30);

/// Runs read to find one a worker drives now.
const RUNS_SCANNED: u32 = 200;

/// Whether any live process resumes `run` at all — `None` while one does or may still —
/// from what the database knows: the run, which run a live worker drives, and how many live
/// processes spend its quota. This process is not one of them (it does not wake runs).
pub async fn nobody(
    history: &dyn QuotaHistory,
    run: &SyncRun,
    now: Timestamp,
) -> Result<Option<Unresumed>, headroom_store::StoreError> {
    let lone = ResumeFacts {
        run,
        now,
        resumers: &[],
        worker_busy_with: None,
        live_on_identity: 0,
    };
    if resume::who_resumes(&lone).is_none() {
        return Ok(None);
    }
    let busy = history
        .sync_runs_page(None, RUNS_SCANNED)
        .await?
        .into_iter()
        .find(|r| r.id != run.id && r.status == SyncRunStatus::Running && resume::claimed(r, now))
        .map(|r| r.id);
    let live_on_identity = history
        .latest_quota_readings(now - LIVE_WINDOW)
        .await?
        .iter()
        .filter(|b| b.latest.reading.host == run.host && b.latest.reading.subject == run.subject)
        .map(|b| b.live_processes)
        .max()
        .unwrap_or(0);
    Ok(resume::who_resumes(&ResumeFacts {
        worker_busy_with: busy,
        live_on_identity,
        ..lone
    }))
}

#[cfg(test)]
mod tests {
    use headroom_store::CredentialBinding;

    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    fn run(fingerprint: &str, owner: &str) -> SyncRun {
        let json = serde_json::json!({
            "id": 7, "kind": "org", "target": "acme", "host": "api.github.com",
            "subject": owner, "status": "hibernating", "requested_stages": null,
            "not_before": null, "deferral_count": 0, "first_deferred_at": null,
            "total_wait": "PT0S", "failure_reason": null, "summary": null, "claimed_by": null,
            "claim_expires_at": null, "created_at": "2026-12-03T00:00:00Z", "started_at": null,
            "finished_at": null, "updated_at": "2026-12-03T00:00:00Z",
            "credential": CredentialBinding {
                fingerprint: Some(fingerprint.into()),
                owner: Some(owner.into()),
                ..CredentialBinding::default()
            }
        });
        serde_json::from_value(json).expect("a sync run")
    }

    fn me(fingerprint: &str, owner: &str) -> Resumer {
        Resumer {
            host: "api.github.com".into(),
            owner: owner.into(),
            fingerprint: Some(fingerprint.into()),
            rebind: false,
        }
    }

    #[test]
    fn another_token_of_the_owner_is_told_the_rebind_command_and_the_own_token_nothing() {
        let r = run("aaaa1111", "user:alice");
        assert_eq!(mine(&r, &me("aaaa1111", "user:alice"), t(0)), None);
        let hint = mine(&r, &me("bbbb2222", "user:alice"), t(0)).expect("not mine");
        assert!(
            hint.why.contains("bound to credential aaaa1111"),
            "{hint:?}"
        );
        assert!(
            hint.why
                .contains("yours is bbbb2222 of the same owner (alice)")
        );
        assert_eq!(
            hint.command,
            "`headroom sync org acme --resume 7 --rebind-credential` (the rebind is recorded in \
             the run)"
        );
        let bob = mine(&r, &me("cccc3333", "user:bob"), t(0)).expect("another owner");
        assert!(bob.why.contains("never moves to another quota"), "{bob:?}");
        assert!(!bob.command.contains("--rebind-credential"), "{bob:?}");
    }

    #[test]
    fn an_owner_pending_run_is_resumed_only_by_its_own_credential() {
        let label = format!(
            "user:{}",
            headroom_store::CredentialUsed::pending_login("aaaa1111")
        );
        let r = run("aaaa1111", &label);
        assert_eq!(mine(&r, &me("aaaa1111", ""), t(0)), None);
        let other = mine(&r, &me("bbbb2222", "user:alice"), t(0)).expect("not its credential");
        assert!(
            other.command.contains("with credential aaaa1111"),
            "{other:?}"
        );
    }
}
