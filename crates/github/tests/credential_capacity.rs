//! Credentials are not capacity, at the library level, against the in-process simulator: two
//! tokens of one user resolve to one quota identity, so they share one governor state and one
//! deferral budget — a run rotated to the second token while the user's quota is spent sends
//! nothing more and goes on counting the same episode of waiting. Tokens of two users are
//! refused together, and a run never moves to the other user's quota.

#![allow(clippy::expect_used, clippy::unwrap_used)]

use std::sync::Arc;

use headroom_core::QuotaKey;
use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::governor::GovernorConfig;
use headroom_github::org::{self, names};
use headroom_http::{Client, Credential};
use headroom_sim::{ExternalSpend, SimConfig, Simulator, TokenSpec};
use headroom_store::{CredentialUsed, NewSyncRun, Store};
use headroom_sync::{
    CredentialRefusal, IdentityError, RunOutcome, Runner, RunnerConfig, SyncError, one_identity,
};

mod org_rig;
use org_rig::API;

const ALICE_1: &str = "ghp_capacitytoken000000000000000000001";
const ALICE_2: &str = "ghp_capacitytoken000000000000000000002";
const BOB: &str = "ghp_capacitytoken000000000000000000003";

fn start() -> Timestamp {
    Timestamp::from_second(1_800_000_000).expect("valid")
}

/// Alice's REST quota is drained by another client the moment each window opens.
fn sim(clock: TokioClock) -> Simulator {
    let mut config = SimConfig::default()
        .with_org("acme", 2)
        .with_token(TokenSpec::user(ALICE_1, "alice"))
        .with_token(TokenSpec::user(ALICE_2, "alice"))
        .with_token(TokenSpec::user(BOB, "bob"))
        .with_seed(3)
        .with_external_spend(ExternalSpend {
            login: "alice".into(),
            per_minute: 1_000_000.0,
        });
    config.public_base_url = API.to_owned();
    Simulator::new(config, clock).expect("valid simulator")
}

fn runner(store: &Arc<dyn Store>, client: &Client, token: &str, clock: TokioClock) -> Runner {
    Runner::new(
        org::stages(),
        Some(org::REPOSITORY_SOURCE),
        store.clone(),
        client.clone(),
        Some(Credential::new(token)),
        clock,
        RunnerConfig {
            inline_wait: SignedDuration::ZERO,
            ..RunnerConfig::default()
        },
    )
    .expect("valid graph")
}

#[tokio::test]
async fn two_tokens_of_one_owner_share_one_identity_one_governor_and_one_budget() {
    let clock = TokioClock::anchored_at(start());
    let sim = sim(clock);
    // Only the first token's owner is known beforehand; the others are discovered.
    let (client, _governor) =
        org_rig::client(&sim, clock, ALICE_1, "alice", GovernorConfig::default()).await;
    let (first, second, bob) = (
        Credential::new(ALICE_1),
        Credential::new(ALICE_2),
        Credential::new(BOB),
    );
    let alice = client.identity(Some(&first)).await.expect("alice");
    assert_eq!(alice, QuotaKey::user("127.0.0.1", "alice"));
    assert_eq!(client.identity(Some(&second)).await.expect("alice"), alice);
    assert_eq!(
        one_identity(&client, ("first", Some(&first)), &[("second", &second)])
            .await
            .expect("one owner"),
        alice
    );
    match one_identity(&client, ("first", Some(&first)), &[("bob", &bob)]).await {
        Err(e @ IdentityError::SeveralOwners(_)) => {
            let message = e.to_string();
            for part in [
                first.fingerprint(),
                bob.fingerprint(),
                "user alice",
                "user bob",
            ] {
                assert!(message.contains(part), "{part:?} not in {message}");
            }
        }
        other => panic!("two owners accepted: {other:?}"),
    }

    let (store, _dir) = org_rig::sqlite_store().await;
    let id = store
        .create_sync_run(&NewSyncRun {
            kind: "org".into(),
            target: "acme".into(),
            key: alice.clone(),
            requested_stages: Some(vec![names::WORKFLOW_RUNS.to_owned()]),
            credential: Some(CredentialUsed {
                fingerprint: Some(first.fingerprint().to_owned()),
                owner: "user:alice".into(),
            }),
            created_at: clock.now(),
        })
        .await
        .expect("run")
        .id;
    let until = match runner(&store, &client, ALICE_1, clock).run(id).await {
        Ok(RunOutcome::Hibernating { until, .. }) => until,
        other => panic!("alice's spent quota must hibernate the run: {other:?}"),
    };
    let before = store.sync_run(id).await.expect("read").expect("run");
    assert!(before.deferral_count >= 1, "{before:?}");
    let sent = sim.request_log().len();

    // The second token, without the flag: refused, nothing sent.
    let plain = runner(&store, &client, ALICE_2, clock);
    assert!(matches!(
        plain.run(id).await,
        Err(SyncError::Credential(
            CredentialRefusal::OtherCredential { .. }
        ))
    ));
    // With it: the same governor still knows alice's quota is spent, so the rotated token
    // buys nothing — no request goes out, and the run waits as long as before, counting the
    // same episode against the same budget.
    let rotated = runner(&store, &client, ALICE_2, clock).rebinding_credential();
    match rotated.run(id).await {
        Ok(RunOutcome::Hibernating { until: again, .. }) => assert!(again >= until),
        other => panic!("a rotated token must not resume a spent quota: {other:?}"),
    }
    assert_eq!(
        sim.request_log().len(),
        sent,
        "the second token sent nothing"
    );
    let after = store.sync_run(id).await.expect("read").expect("run");
    assert!(after.deferral_count >= before.deferral_count, "{after:?}");
    assert_eq!(after.first_deferred_at, before.first_deferred_at);
    assert_eq!(
        after.credential.fingerprint.as_deref(),
        Some(second.fingerprint())
    );
    assert_eq!(
        after.credential.rebound_from.as_deref(),
        Some(first.fingerprint())
    );

    // Bob's token never resumes it, flag or not, and sends nothing for it.
    let other = runner(&store, &client, BOB, clock).rebinding_credential();
    assert!(matches!(
        other.run(id).await,
        Err(SyncError::Credential(CredentialRefusal::OtherOwner { .. }))
    ));
    assert_eq!(sim.request_log().len(), sent);
    let last = store.sync_run(id).await.expect("read").expect("run");
    assert_eq!(last.subject, "user:alice");
    assert_eq!(last.credential.rebind_count, 1);
}
