//! The core ledger across a poll: the window's rollover, convergence to a response's rate
//! headers (window start, the newest remaining, clamped allowances, co-tenant usage), and
//! global blocks.

use headroom_core::clock::Timestamp;
use headroom_core::lanes::{CoreLaneConfig, CoreLanes};
use headroom_core::telemetry;
use headroom_http::RateLimitReason;
use headroom_store::feed_state::{CoreLedger, WindowStatus};

/// A window whose reset has passed rolls: counters restart, the secondary-limit strikes stay.
pub(super) fn roll_window(ledger: &mut CoreLedger, now: Timestamp) {
    if ledger.window_status != WindowStatus::Uninitialized
        && ledger.reset_at.is_some_and(|r| r <= now)
    {
        tracing::info!(
            event = telemetry::BUDGET_WINDOW_ROLLED,
            poll_used = ledger.poll_used,
            enrichment_used = ledger.enrichment_used
        );
        ledger.window_status = WindowStatus::Uninitialized;
        ledger.poll_used = 0;
        ledger.enrichment_used = 0;
        ledger.actor_share_used = 0;
        ledger.repository_share_used = 0;
        ledger.co_tenant_usage = 0;
        ledger.remaining = None;
        ledger.reset_at = None;
        ledger.window_started_at = None;
    }
    if ledger.global_blocked_until.is_some_and(|b| b <= now)
        && ledger.window_status == WindowStatus::GloballyBlocked
    {
        tracing::info!(event = telemetry::BUDGET_GLOBAL_BLOCK_CLEARED);
        ledger.window_status = if ledger.reset_at.is_some() {
            WindowStatus::Active
        } else {
            WindowStatus::Uninitialized
        };
    }
}

/// Converges the ledger to a core response's headers (other resources are ignored).
pub(super) fn reconcile(
    ledger: &mut CoreLedger,
    signal: &headroom_core::RateLimitSignal,
    configured: CoreLanes,
    formula: &CoreLaneConfig,
    now: Timestamp,
) {
    if signal
        .resource
        .as_ref()
        .is_some_and(|b| b.as_str() != "core")
    {
        return;
    }
    let (Some(limit), Some(remaining), Some(reset)) =
        (signal.limit, signal.remaining, signal.reset_at)
    else {
        return;
    };
    let used = signal.used.unwrap_or(limit.saturating_sub(remaining));
    let new_window = ledger.window_status == WindowStatus::Uninitialized
        || ledger.reset_at.is_none_or(|r| reset > r);
    if new_window {
        ledger.window_status = WindowStatus::Active;
        ledger.window_started_at = Some(now);
        ledger.reset_at = Some(reset);
        ledger.limit = Some(limit);
        ledger.remaining = Some(remaining);
        tracing::info!(event = telemetry::BUDGET_WINDOW_INITIALIZED, limit, reserve = ledger.reserve,
            poll_allowance = ledger.poll_allowance, enrichment_allowance = ledger.enrichment_allowance,
            rate_limit_resource = "core", rate_limit_limit = limit, rate_limit_remaining = remaining,
            rate_limit_used = used, rate_limit_reset_at = %reset, poll_used = ledger.poll_used);
    } else if ledger.reset_at == Some(reset) {
        // Within one window the smaller remaining is newer: never move backwards.
        ledger.remaining = Some(ledger.remaining.map_or(remaining, |r| r.min(remaining)));
        ledger.limit = Some(limit);
    }
    if reset <= now {
        tracing::warn!(event = telemetry::BUDGET_WINDOW_RESET_IN_PAST, rate_limit_reset_at = %reset);
    }
    // A limit that cannot fund the configured formula clamps the detail lane.
    if limit != configured.limit {
        let at_limit = CoreLaneConfig { limit, ..*formula }
            .resolve()
            .map_or(0, |lanes| lanes.detail_allowance);
        if at_limit < ledger.enrichment_allowance {
            tracing::warn!(
                event = telemetry::BUDGET_ALLOWANCES_CLAMPED,
                limit,
                enrichment_allowance = at_limit
            );
            ledger.enrichment_allowance = at_limit;
        }
    }
    let ours = ledger.poll_used + ledger.enrichment_used;
    let co_tenant = used.saturating_sub(ours);
    if co_tenant > 0 {
        ledger.co_tenant_usage = co_tenant;
        tracing::debug!(
            event = telemetry::BUDGET_CO_TENANT_USAGE,
            co_tenant_usage = co_tenant,
            rate_limit_used = used,
            application_used = ours
        );
        if ledger.remaining.is_some_and(|r| r <= ledger.reserve) {
            tracing::info!(
                event = telemetry::BUDGET_CO_TENANT_PRESSURE,
                co_tenant_usage = co_tenant,
                rate_limit_remaining = remaining,
                reserve = ledger.reserve
            );
        }
    }
    if ledger.poll_allowance > 0 && ledger.poll_used == ledger.poll_allowance {
        tracing::info!(
            event = telemetry::BUDGET_CLASS_EXHAUSTED,
            class = "poll",
            poll_used = ledger.poll_used
        );
    }
}

/// Converges the core ledger to a response's headers outside a poll (the detail lane).
pub(crate) fn reconcile_core(
    ledger: &mut CoreLedger,
    signal: &headroom_core::RateLimitSignal,
    now: Timestamp,
) {
    if signal
        .resource
        .as_ref()
        .is_some_and(|b| b.as_str() != "core")
    {
        return;
    }
    if let (Some(remaining), Some(reset)) = (signal.remaining, signal.reset_at) {
        if ledger.reset_at == Some(reset) {
            ledger.remaining = Some(ledger.remaining.map_or(remaining, |r| r.min(remaining)));
        } else if ledger.reset_at.is_none_or(|r| reset > r) && reset > now {
            ledger.reset_at = Some(reset);
            ledger.remaining = Some(remaining);
        }
    }
}

/// A global block only ever moves later. Secondary limits count strikes that survive rollover.
///
/// Which limit it was is the client's typed reason, not its wording: GitHub's older "abuse
/// detection mechanism" message is the secondary limit's former name, and the triage already
/// classifies it as secondary, so it arrives here as one.
pub(super) fn block_globally(ledger: &mut CoreLedger, until: Timestamp, reason: &RateLimitReason) {
    if ledger.global_blocked_until.is_none_or(|b| until > b) {
        ledger.global_blocked_until = Some(until);
        tracing::info!(event = telemetry::BUDGET_GLOBAL_BLOCK_SET, global_blocked_until = %until, reason = %reason);
    }
    ledger.window_status = WindowStatus::GloballyBlocked;
    if reason.is_secondary() {
        ledger.consecutive_secondary_limits += 1;
    }
}

#[cfg(test)]
mod tests {
    use headroom_core::governor::WaitReason;
    use headroom_core::quota::Bucket;
    use headroom_core::signal::LimitReason;
    use headroom_core::triage::{GithubTriage, triage_github};

    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    /// GitHub's former name for the secondary limit, word for word.
    const ABUSE_BODY: &str = r#"{"message":"You have triggered an abuse detection mechanism. Please wait a few minutes before you try again.","documentation_url":"https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits"}"#;

    #[test]
    fn the_abuse_detection_wording_is_triaged_as_a_secondary_limit() {
        let triage = triage_github(403, &http::HeaderMap::new(), ABUSE_BODY.as_bytes());
        assert_eq!(triage, Some(GithubTriage::Secondary));
    }

    #[test]
    fn secondary_limits_count_strikes_and_others_do_not() {
        let mut ledger = CoreLedger::new("api.github.com", "me");
        // What the client reports for the abuse-detection answer: the origin's secondary.
        block_globally(
            &mut ledger,
            at(60),
            &RateLimitReason::Origin(LimitReason::Secondary),
        );
        assert_eq!(ledger.consecutive_secondary_limits, 1);
        let governor = RateLimitReason::Governor(WaitReason::SecondaryBlock {
            bucket: Bucket::core(),
            strikes: 1,
        });
        block_globally(&mut ledger, at(30), &governor);
        assert_eq!(ledger.consecutive_secondary_limits, 2);
        // A primary limit blocks as well, but is no strike; the block never moves earlier.
        block_globally(
            &mut ledger,
            at(3600),
            &RateLimitReason::Origin(LimitReason::Primary),
        );
        assert_eq!(ledger.consecutive_secondary_limits, 2);
        assert_eq!(ledger.window_status, WindowStatus::GloballyBlocked);
        assert_eq!(ledger.global_blocked_until, Some(at(3600)));
    }
}
