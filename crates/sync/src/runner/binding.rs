//! Credentials are not capacity: a run is bound to one credential, and a resume decides here,
//! purely, whether the credential it holds may go on with the run.
//!
//! A run's quota identity is its host and subject, fixed when it was created. A credential
//! that resolves to another identity would spend another quota under the run's name, so it is
//! refused whatever the flags say: the honest way to sync with it is a new run. Another token
//! of the same owner spends the same quota (one governor, one budget); it goes on only when the
//! operator says so with `--rebind-credential`, and the rebind is recorded in the run. A run
//! created before bindings were recorded adopts the first credential of its owner that resumes
//! it. A run created while its credential's owner could not be learned (owner pending: the
//! quota spent, `GET /user` held back) adopts, when that very credential resumes it, the owner
//! it resolves to then; no other credential resumes it, as none can be shown to share a quota
//! with it.

use headroom_core::QuotaKey;
use headroom_store::{CredentialBinding, SyncRun, subject_label};

/// What a resume does to the run's binding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Binding {
    /// Bound to this very credential: nothing to change.
    Keep,
    /// Not bound yet, or its owner pending: bind it to the credential presented and the owner
    /// it resolved to.
    Adopt,
    /// Bound to another credential of the same owner, and a rebind was asked for.
    Rebind {
        /// The fingerprint it replaces.
        from: Option<String>,
    },
}

/// Why a resume may not go on with a run's credential binding. The message names the run and
/// fingerprints, never a token.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CredentialRefusal {
    /// The credential spends another quota identity than the run's.
    #[error(
        "sync run {run} spends the quota of {run_identity}, but this process's credential \
         {presented} spends {presented_identity}: a run never moves to another quota (not \
         even with --rebind-credential); resume it with a credential of {run_identity}, or \
         start a new run"
    )]
    OtherOwner {
        /// The run.
        run: i64,
        /// The run's host and subject.
        run_identity: String,
        /// The presented credential's fingerprint.
        presented: String,
        /// The identity it resolved to.
        presented_identity: String,
    },
    /// Another credential of the run's owner, without `--rebind-credential`.
    #[error(
        "sync run {run} is bound to credential {bound}, but this process holds credential \
         {presented} (the same owner, {owner}): pass --rebind-credential to go on with it \
         (the rebind is recorded in the run)"
    )]
    OtherCredential {
        /// The run.
        run: i64,
        /// The fingerprint the run is bound to.
        bound: String,
        /// The fingerprint presented.
        presented: String,
        /// The owner both resolve to.
        owner: String,
    },
    /// Another credential than the one an owner-pending run was created with.
    #[error(
        "sync run {run} was created with credential {bound} while its owner could not be \
         learned (the quota was spent), and this process holds credential {presented}: only \
         credential {bound} resumes it (its owner is learned then); resume it with that token"
    )]
    OwnerPending {
        /// The run.
        run: i64,
        /// The fingerprint the run is bound to.
        bound: String,
        /// The fingerprint presented.
        presented: String,
    },
}

/// A fingerprint as a message shows it.
fn shown(fingerprint: Option<&str>) -> String {
    fingerprint.map_or_else(|| "none (unauthenticated)".to_owned(), str::to_owned)
}

/// Decides what resuming `run` with the credential `fingerprint`, which resolved to `key`,
/// does to its binding; `rebind` is `--rebind-credential`.
pub(crate) fn decide(
    run: &SyncRun,
    key: &QuotaKey,
    fingerprint: Option<&str>,
    rebind: bool,
) -> Result<Binding, CredentialRefusal> {
    let owner = subject_label(&key.subject);
    let CredentialBinding {
        fingerprint: bound,
        owner: bound_owner,
        ..
    } = &run.credential;
    if let Some(bound) = run.credential.owner_pending() {
        // Its owner is whoever this very credential turns out to belong to, on the run's host.
        if fingerprint == Some(bound) && *key.host == *run.host {
            return Ok(Binding::Adopt);
        }
        return Err(CredentialRefusal::OwnerPending {
            run: run.id,
            bound: bound.to_owned(),
            presented: shown(fingerprint),
        });
    }
    // An unbound run's identity is still its host and subject.
    let run_owner = bound_owner.as_deref().unwrap_or(&run.subject);
    if *key.host != *run.host || owner != run_owner {
        return Err(CredentialRefusal::OtherOwner {
            run: run.id,
            run_identity: format!("{run_owner} on {}", run.host),
            presented: shown(fingerprint),
            presented_identity: format!("{owner} on {}", key.host),
        });
    }
    if bound_owner.is_none() {
        return Ok(Binding::Adopt);
    }
    if bound.as_deref() == fingerprint {
        return Ok(Binding::Keep);
    }
    if rebind {
        return Ok(Binding::Rebind {
            from: bound.clone(),
        });
    }
    Err(CredentialRefusal::OtherCredential {
        run: run.id,
        bound: shown(bound.as_deref()),
        presented: shown(fingerprint),
        owner,
    })
}

#[cfg(test)]
mod tests {
    use headroom_core::clock::{SignedDuration, Timestamp};
    use headroom_store::SyncRunStatus;
    use proptest::prelude::*;

    use super::*;

    fn run(fingerprint: Option<&str>, owner: Option<&str>) -> SyncRun {
        let t = Timestamp::UNIX_EPOCH;
        SyncRun {
            id: 7,
            kind: "org".into(),
            target: "acme".into(),
            host: "api.github.com".into(),
            subject: "user:alice".into(),
            status: SyncRunStatus::Hibernating,
            requested_stages: None,
            not_before: None,
            deferral_count: 0,
            first_deferred_at: None,
            total_wait: SignedDuration::ZERO,
            failure_reason: None,
            summary: None,
            claimed_by: None,
            claim_expires_at: None,
            created_at: t,
            started_at: None,
            finished_at: None,
            updated_at: t,
            credential: CredentialBinding {
                fingerprint: fingerprint.map(str::to_owned),
                owner: owner.map(str::to_owned),
                ..CredentialBinding::default()
            },
        }
    }

    fn alice() -> QuotaKey {
        QuotaKey::user("api.github.com", "alice")
    }

    #[test]
    fn the_same_credential_keeps_and_an_unbound_run_adopts() {
        let bound = run(Some("aaaaaaaaaaaaaaaa"), Some("user:alice"));
        assert_eq!(
            decide(&bound, &alice(), Some("aaaaaaaaaaaaaaaa"), false),
            Ok(Binding::Keep)
        );
        let legacy = run(None, None);
        assert_eq!(
            decide(&legacy, &alice(), Some("bbbbbbbbbbbbbbbb"), false),
            Ok(Binding::Adopt)
        );
    }

    #[test]
    fn another_token_of_the_owner_needs_the_flag_and_says_so() {
        let bound = run(Some("aaaaaaaaaaaaaaaa"), Some("user:alice"));
        let refused = decide(&bound, &alice(), Some("bbbbbbbbbbbbbbbb"), false)
            .expect_err("another token without the flag");
        let message = refused.to_string();
        for part in [
            "run 7",
            "aaaaaaaaaaaaaaaa",
            "bbbbbbbbbbbbbbbb",
            "--rebind-credential",
        ] {
            assert!(message.contains(part), "{part}: {message}");
        }
        assert_eq!(
            decide(&bound, &alice(), Some("bbbbbbbbbbbbbbbb"), true),
            Ok(Binding::Rebind {
                from: Some("aaaaaaaaaaaaaaaa".into())
            })
        );
    }

    #[test]
    fn another_owner_is_refused_even_with_the_flag_and_even_unbound() {
        let bob = QuotaKey::user("api.github.com", "bob");
        for r in [
            run(Some("aaaaaaaaaaaaaaaa"), Some("user:alice")),
            run(None, None),
        ] {
            let refused =
                decide(&r, &bob, Some("cccccccccccccccc"), true).expect_err("another owner");
            assert!(matches!(refused, CredentialRefusal::OtherOwner { .. }));
            let message = refused.to_string();
            assert!(
                message.contains("user:bob") && message.contains("user:alice"),
                "{message}"
            );
        }
        // The same login on another host is another quota too.
        let elsewhere = QuotaKey::user("ghe.example.com", "alice");
        let bound = run(Some("aaaaaaaaaaaaaaaa"), Some("user:alice"));
        assert!(decide(&bound, &elsewhere, Some("aaaaaaaaaaaaaaaa"), true).is_err());
    }

    #[test]
    fn an_owner_pending_run_adopts_the_owner_its_own_credential_resolves_to() {
        let label = format!(
            "user:{}",
            headroom_store::CredentialUsed::pending_login("aaaaaaaaaaaaaaaa")
        );
        let mut pending = run(Some("aaaaaaaaaaaaaaaa"), Some(&label));
        pending.subject = label.clone();
        assert_eq!(
            decide(&pending, &alice(), Some("aaaaaaaaaaaaaaaa"), false),
            Ok(Binding::Adopt)
        );
        // Any owner: the run was never anyone else's.
        let bob = QuotaKey::user("api.github.com", "bob");
        assert_eq!(
            decide(&pending, &bob, Some("aaaaaaaaaaaaaaaa"), false),
            Ok(Binding::Adopt)
        );
        // Another credential cannot be shown to share its quota, even with the flag.
        let refused = decide(&pending, &alice(), Some("bbbbbbbbbbbbbbbb"), true)
            .expect_err("another credential");
        assert!(matches!(refused, CredentialRefusal::OwnerPending { .. }));
        assert!(
            refused.to_string().contains("aaaaaaaaaaaaaaaa"),
            "{refused}"
        );
        let elsewhere = QuotaKey::user("ghe.example.com", "alice");
        assert!(decide(&pending, &elsewhere, Some("aaaaaaaaaaaaaaaa"), false).is_err());
    }

    proptest! {
        /// Whatever the binding and the flag, a resume goes on only under the run's own
        /// identity, and changes the bound credential only when a rebind was asked for.
        #[test]
        fn a_resume_never_moves_a_run_to_another_quota(
            bound in prop::option::of("[ab]{16}"),
            bound_owner in prop::option::of(prop::sample::select(vec!["user:alice", "user:bob"])),
            presented in prop::option::of("[ab]{16}"),
            login in prop::sample::select(vec!["alice", "bob"]),
            rebind in any::<bool>(),
        ) {
            let r = run(bound.as_deref(), bound_owner);
            let key = QuotaKey::user("api.github.com", login);
            let run_owner = bound_owner.unwrap_or("user:alice");
            match decide(&r, &key, presented.as_deref(), rebind) {
                Ok(decision) => {
                    prop_assert_eq!(format!("user:{login}"), run_owner);
                    match decision {
                        Binding::Keep => prop_assert_eq!(&bound, &presented),
                        Binding::Adopt => prop_assert!(bound_owner.is_none()),
                        Binding::Rebind { from } => {
                            prop_assert!(rebind);
                            prop_assert_eq!(&from, &bound);
                            prop_assert_ne!(&bound, &presented);
                        }
                    }
                }
                Err(CredentialRefusal::OtherOwner { .. }) => {
                    prop_assert_ne!(format!("user:{login}"), run_owner);
                }
                Err(CredentialRefusal::OtherCredential { .. }) => {
                    prop_assert!(!rebind);
                    prop_assert_ne!(&bound, &presented);
                }
                Err(CredentialRefusal::OwnerPending { .. }) => {
                    prop_assert!(r.credential.owner_pending().is_some());
                }
            }
        }
    }
}
