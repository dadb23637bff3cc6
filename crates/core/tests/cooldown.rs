//! Cooldown gating's pure rule: which refusals gate which requests, and for how long.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::cooldown::{DEFAULT_WINDOW, LOOKBACK, Refusal, blocking};
use headroom_core::{Dimension, LimitReason, Provider, QuotaKey};
use proptest::prelude::*;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn alice() -> QuotaKey {
    QuotaKey::user("api.github.com", "alice")
}

fn refusal(reason: LimitReason) -> Refusal {
    Refusal {
        provider: Provider::GitHub,
        key: alice(),
        route_family: Some("issues".to_owned()),
        dimension: Some(Dimension::RestCore),
        reason,
        retry_after: None,
        reset_at: None,
        observed_at: t(0),
    }
}

#[test]
fn a_window_is_the_reset_for_a_primary_limit_and_the_retry_after_otherwise() {
    let mut primary = refusal(LimitReason::Primary);
    primary.reset_at = Some(t(1800));
    primary.retry_after = Some(SignedDuration::from_secs(30));
    assert_eq!(primary.ends_at(), t(1800));
    primary.reset_at = None;
    assert_eq!(primary.ends_at(), t(30));

    // GitHub names its primary reset on a secondary refusal too: the retry-after rules.
    let mut secondary = refusal(LimitReason::Secondary);
    secondary.reset_at = Some(t(3000));
    secondary.retry_after = Some(SignedDuration::from_secs(60));
    assert_eq!(secondary.ends_at(), t(60));
    secondary.retry_after = None;
    assert_eq!(secondary.ends_at(), t(0) + DEFAULT_WINDOW);
}

#[test]
fn a_cooldown_never_outlasts_the_lookback_and_never_overflows() {
    let mut r = refusal(LimitReason::Secondary);
    r.retry_after = Some(SignedDuration::from_secs(i64::MAX / 4));
    assert_eq!(r.ends_at(), t(0) + LOOKBACK);
    r.reason = LimitReason::Primary;
    r.reset_at = Some(Timestamp::MAX);
    assert_eq!(r.ends_at(), t(0) + LOOKBACK);
}

#[test]
fn the_match_is_identity_provider_and_family_never_the_credential() {
    let r = vec![refusal(LimitReason::Secondary)];
    let gated = |provider, key: &QuotaKey, family, dimension| {
        blocking(&r, provider, key, family, dimension, t(10)).is_some()
    };
    assert!(gated(
        Provider::GitHub,
        &alice(),
        "issues",
        Dimension::RestCore
    ));
    assert!(!gated(
        Provider::GitHub,
        &alice(),
        "pull_requests",
        Dimension::RestCore
    ));
    assert!(!gated(
        Provider::GitLab,
        &alice(),
        "issues",
        Dimension::RestCore
    ));
    let enterprise = QuotaKey::user("ghe.example.com", "alice");
    assert!(!gated(
        Provider::GitHub,
        &enterprise,
        "issues",
        Dimension::RestCore
    ));
    let bob = QuotaKey::user("api.github.com", "bob");
    assert!(!gated(
        Provider::GitHub,
        &bob,
        "issues",
        Dimension::RestCore
    ));
}

#[test]
fn an_unattributed_refusal_gates_its_dimension() {
    let mut r = refusal(LimitReason::Secondary);
    r.route_family = None;
    r.dimension = Some(Dimension::GraphqlCost);
    let r = vec![r];
    assert!(
        blocking(
            &r,
            Provider::GitHub,
            &alice(),
            "issues",
            Dimension::GraphqlCost,
            t(1)
        )
        .is_some()
    );
    assert!(
        blocking(
            &r,
            Provider::GitHub,
            &alice(),
            "issues",
            Dimension::RestCore,
            t(1)
        )
        .is_none()
    );
}

#[test]
fn a_permission_refusal_is_no_cooldown() {
    let r = vec![refusal(LimitReason::Permission)];
    assert!(
        blocking(
            &r,
            Provider::GitHub,
            &alice(),
            "issues",
            Dimension::RestCore,
            t(1)
        )
        .is_none()
    );
}

#[test]
fn the_last_window_to_end_wins() {
    let mut a = refusal(LimitReason::Secondary);
    a.retry_after = Some(SignedDuration::from_secs(30));
    let mut b = refusal(LimitReason::Secondary);
    b.retry_after = Some(SignedDuration::from_secs(90));
    let c = blocking(
        &[a, b],
        Provider::GitHub,
        &alice(),
        "issues",
        Dimension::RestCore,
        t(1),
    );
    assert_eq!(c.map(|c| c.until), Some(t(90)));
}

proptest! {
    /// A cooldown is active exactly while `now` is before its end, which is after the
    /// observation and at most the lookback later.
    #[test]
    fn active_exactly_until_its_end(
        retry in proptest::option::of(0i64..10_000),
        reset in proptest::option::of(-100i64..10_000),
        now in -100i64..10_000,
        primary in any::<bool>(),
    ) {
        let mut r = refusal(if primary { LimitReason::Primary } else { LimitReason::Secondary });
        r.retry_after = retry.map(SignedDuration::from_secs);
        r.reset_at = reset.map(t);
        let end = r.ends_at();
        prop_assert!(end <= t(0) + LOOKBACK);
        let active = blocking(&[r], Provider::GitHub, &alice(), "issues", Dimension::RestCore, t(now));
        prop_assert_eq!(active.is_some(), t(now) < end);
    }
}

/// Issue 34, item 10: one host may serve GitHub's and GitLab's APIs (the simulator does), and
/// the two are two quotas: GitHub's refusal gates GitHub's `alice`, never GitLab's `alice` on
/// the same host. A key stored before keys had a provider reads back as GitHub's, and GitHub's
/// keys read as they always have.
#[test]
fn a_quota_key_is_its_provider_as_well_as_its_host() {
    let gitlab = alice().of_provider(Provider::GitLab);
    assert_ne!(gitlab, alice());
    let r = vec![refusal(LimitReason::Secondary)];
    let on = |provider, key: &QuotaKey| {
        blocking(&r, provider, key, "issues", Dimension::RestCore, t(1)).is_some()
    };
    assert!(on(Provider::GitHub, &alice()));
    assert!(!on(Provider::GitLab, &gitlab));

    assert_eq!(alice().to_string(), "user alice on api.github.com");
    assert_eq!(gitlab.to_string(), "user alice on api.github.com (GitLab)");
    let stored = r#"{"host":"api.github.com","subject":{"kind":"user","id":"alice"}}"#;
    let read: QuotaKey = serde_json::from_str(stored).expect("a stored key");
    assert_eq!(read, alice());
    assert_eq!(serde_json::to_string(&alice()).expect("JSON"), stored);
    let round: QuotaKey =
        serde_json::from_str(&serde_json::to_string(&gitlab).expect("JSON")).expect("read");
    assert_eq!(round, gitlab);
}
