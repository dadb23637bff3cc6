//! Who can resume a sync run — pure, for the dashboard, `/api/sync/runs`, `sync status` and
//! `sync org`'s exit hint alike.
//!
//! A run waits for its wake time; then a worker (`headroom sync worker`, or `headroom run`)
//! claims it within a poll. A worker takes a run only with the credential the run is bound to
//! (another token of the same owner only under `--rebind-credential`, never another owner's):
//! so a run bound to a credential no live process holds stays "hibernating" past its wake time
//! forever, which reads like an ordinary wait unless it is said. Here that is decided from what
//! is known: the run (status, wake time, claim, binding), the processes known to wake runs
//! with the credential each holds (a CLI passes itself; the server, what it knows), and
//! whether another run keeps a worker busy.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::{ProcessMark, SyncRun, SyncRunStatus};
use serde::Serialize;

/// How long past its wake time an unclaimed run may wait before nobody resuming it is said:
/// a few of a worker's polls (15 s by default).
pub const OVERDUE_AFTER: SignedDuration = SignedDuration::from_secs(60);

/// A process that wakes sync runs, and the credential it holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resumer {
    /// The API host it speaks to.
    pub host: String,
    /// The quota identity its credential resolved to (`user:alice`, as a run's subject).
    pub owner: String,
    /// Its credential's fingerprint (`None`: unauthenticated).
    pub fingerprint: Option<String>,
    /// Whether it runs with `--rebind-credential`.
    pub rebind: bool,
}

/// What decides whether a run is resumed.
#[derive(Debug, Clone, Copy)]
pub struct ResumeFacts<'a> {
    /// The run.
    pub run: &'a SyncRun,
    /// Now.
    pub now: Timestamp,
    /// Processes known to wake sync runs, with their credentials.
    pub resumers: &'a [Resumer],
    /// Another run a live worker is driving now (a worker drives one run at a time): this
    /// one may simply be next.
    pub worker_busy_with: Option<i64>,
    /// Live processes spending the run's quota identity now, whatever they do.
    pub live_on_identity: u64,
}

/// Nobody resumes the run: why, and the command that will.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct Unresumed {
    /// Since when it is due.
    #[schema(value_type = String, format = DateTime)]
    pub due_since: Timestamp,
    /// Why no live process resumes it, in words.
    pub why: String,
    /// The command that resumes it.
    pub command: String,
}

/// When the run is due to be taken up, if it waits to be: its wake time, or its creation for
/// a pending run with none.
fn due_at(run: &SyncRun) -> Option<Timestamp> {
    match run.status {
        SyncRunStatus::Hibernating | SyncRunStatus::Pending => {
            Some(run.not_before.unwrap_or(run.created_at))
        }
        // A running run whose holder is gone or whose claim lapsed is due again.
        SyncRunStatus::Running => Some(run.claim_expires_at.unwrap_or(run.updated_at)),
        SyncRunStatus::Done | SyncRunStatus::Failed => None,
    }
}

/// Whether a live process holds the run's claim.
pub fn claimed(run: &SyncRun, now: Timestamp) -> bool {
    run.claimed_by
        .as_deref()
        .is_some_and(|holder| !ProcessMark::holder_is_gone(holder))
        && run.claim_expires_at.is_some_and(|until| until > now)
}

/// Whether `r` takes `run` up: the run's credential, or another of its owner under
/// `--rebind-credential`, or any of its owner's for a run bound to none yet.
pub fn takes(r: &Resumer, run: &SyncRun) -> bool {
    let owner = run.credential.owner.as_deref().unwrap_or(&run.subject);
    r.host == run.host
        && r.owner == owner
        && (run.credential.owner.is_none()
            || r.fingerprint == run.credential.fingerprint
            || r.rebind)
}

/// A fingerprint as said ("none (unauthenticated)" for none).
fn shown(fingerprint: Option<&str>) -> String {
    fingerprint.map_or_else(|| "none (unauthenticated)".to_owned(), str::to_owned)
}

/// `None` while the run is resumed or may still be (finished, claimed by a live process, not
/// yet due, due only moments ago, a worker busy with another run, a known process that takes
/// it); else why nobody resumes it and the command that will.
pub fn who_resumes(facts: &ResumeFacts<'_>) -> Option<Unresumed> {
    let run = facts.run;
    let due = due_at(run)?;
    if claimed(run, facts.now)
        || facts.now < due + OVERDUE_AFTER
        || facts.worker_busy_with.is_some()
        || facts.resumers.iter().any(|r| takes(r, run))
    {
        return None;
    }
    let owner = run.credential.owner.as_deref().unwrap_or(&run.subject);
    let who = owner.split_once(':').map_or(owner, |(_, o)| o);
    let bound = run.credential.fingerprint.as_deref();
    let resume = format!(
        "headroom sync {} {} --resume {}",
        run.kind, run.target, run.id
    );
    let same_owner: Vec<&Resumer> = facts
        .resumers
        .iter()
        .filter(|r| r.host == run.host && r.owner == owner)
        .collect();
    let (why, command) = if run.credential.owner.is_none() {
        (
            format!("no live process wakes sync runs with a credential of {who}"),
            format!("{resume} (or keep `headroom sync worker` running) with a token of {who}"),
        )
    } else if let Some(r) = same_owner.first() {
        (
            format!(
                "it is bound to credential {}, and the live process holds credential {} of \
                 the same owner ({who}) without --rebind-credential",
                shown(bound),
                shown(r.fingerprint.as_deref())
            ),
            format!(
                "`headroom sync worker --rebind-credential` with credential {} (the rebind is \
                 recorded in the run), or `{resume}` with credential {}",
                shown(r.fingerprint.as_deref()),
                shown(bound)
            ),
        )
    } else {
        let live = match facts.live_on_identity {
            0 => format!("no live process spends {who}'s quota"),
            1 => format!("1 live process spends {who}'s quota, not with that credential"),
            n => format!("{n} live processes spend {who}'s quota, none with that credential"),
        };
        (
            format!(
                "it is bound to credential {} and no live process that wakes sync runs holds \
                 it ({live}); a worker with another token of {who} takes it only with \
                 --rebind-credential",
                shown(bound)
            ),
            format!(
                "`{resume}` with credential {}, or `headroom sync worker --rebind-credential` \
                 with another token of {who}",
                shown(bound)
            ),
        )
    };
    Some(Unresumed {
        due_since: due,
        why: format!("No live process resumes it: due and not taken up; {why}."),
        command,
    })
}

#[cfg(test)]
mod tests {
    use headroom_store::CredentialBinding;

    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    fn run(status: SyncRunStatus, bound: Option<&str>) -> SyncRun {
        SyncRun {
            id: 7,
            kind: "org".into(),
            target: "acme".into(),
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            status,
            requested_stages: None,
            not_before: Some(t(0)),
            deferral_count: 1,
            first_deferred_at: None,
            total_wait: SignedDuration::ZERO,
            failure_reason: None,
            summary: None,
            claimed_by: None,
            claim_expires_at: None,
            created_at: t(-600),
            started_at: Some(t(-600)),
            finished_at: None,
            updated_at: t(-300),
            credential: CredentialBinding {
                fingerprint: bound.map(str::to_owned),
                owner: bound.map(|_| "user:alice".to_owned()),
                ..CredentialBinding::default()
            },
        }
    }

    fn alice(fingerprint: &str, rebind: bool) -> Resumer {
        Resumer {
            host: "api.github.com".into(),
            owner: "user:alice".into(),
            fingerprint: Some(fingerprint.into()),
            rebind,
        }
    }

    fn facts<'a>(run: &'a SyncRun, now: Timestamp, resumers: &'a [Resumer]) -> ResumeFacts<'a> {
        ResumeFacts {
            run,
            now,
            resumers,
            worker_busy_with: None,
            live_on_identity: 1,
        }
    }

    #[test]
    fn a_run_bound_to_a_credential_no_live_process_holds_says_so_and_names_the_command() {
        let r = run(SyncRunStatus::Hibernating, Some("aaaa1111"));
        let service = [alice("bbbb2222", false)];
        let stuck = who_resumes(&facts(&r, t(300), &service)).expect("nobody resumes it");
        assert_eq!(stuck.due_since, t(0));
        assert!(
            stuck.why.contains("bound to credential aaaa1111"),
            "{stuck:?}"
        );
        assert!(stuck.why.contains("bbbb2222"), "{stuck:?}");
        assert!(
            stuck
                .command
                .contains("headroom sync worker --rebind-credential")
                && stuck.command.contains("headroom sync org acme --resume 7"),
            "{stuck:?}"
        );
        // Knowing no process: still said, from the run being overdue and unclaimed.
        let unknown = who_resumes(&facts(&r, t(300), &[])).expect("nobody resumes it");
        assert!(
            unknown.why.contains("1 live process spends alice's quota"),
            "{unknown:?}"
        );
        assert!(unknown.command.contains("--rebind-credential"));
    }

    #[test]
    fn a_run_someone_resumes_or_that_is_not_due_yet_is_an_ordinary_wait() {
        let r = run(SyncRunStatus::Hibernating, Some("aaaa1111"));
        assert_eq!(who_resumes(&facts(&r, t(-60), &[])), None, "not due");
        assert_eq!(who_resumes(&facts(&r, t(30), &[])), None, "due moments ago");
        for taker in [alice("aaaa1111", false), alice("bbbb2222", true)] {
            assert_eq!(who_resumes(&facts(&r, t(300), &[taker])), None);
        }
        let busy = ResumeFacts {
            worker_busy_with: Some(6),
            ..facts(&r, t(300), &[])
        };
        assert_eq!(who_resumes(&busy), None, "a worker is busy with run 6");
        let done = run(SyncRunStatus::Done, Some("aaaa1111"));
        assert_eq!(who_resumes(&facts(&done, t(300), &[])), None);
        // Another owner's process never takes it.
        let bob = Resumer {
            owner: "user:bob".into(),
            ..alice("cccc", true)
        };
        assert!(who_resumes(&facts(&r, t(300), &[bob])).is_some());
        // Claimed until later by a holder that is not a process mark: resumed.
        let mut claimed = r.clone();
        claimed.claimed_by = Some("worker-1".into());
        claimed.claim_expires_at = Some(t(400));
        assert_eq!(who_resumes(&facts(&claimed, t(300), &[])), None);
    }
}
