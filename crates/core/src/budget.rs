//! Operators' caps on what organization sync may spend of a quota window: a share of a
//! bucket's limit ("sync may use at most 70 % of alice's core per window") and a number of
//! requests for a route family. Pure: the runner reads the governor's reading of the bucket
//! and its own count of the family in the current window, and asks [`check`] before each
//! request; a unit that would exceed a cap waits for the window's reset with that reason.
//!
//! A share counts the window's whole use (the governor's reading: every process and every
//! other consumer of the identity), so sync never takes the window past it. Without a reading
//! nothing is capped: the first answer brings one.

use std::collections::BTreeMap;
use std::fmt;

use crate::clock::Timestamp;

/// The caps in force (empty: none).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SyncCaps {
    /// Per bucket, the share of its window's limit sync may take the window to (0 < share ≤ 1).
    pub shares: BTreeMap<String, f64>,
    /// Per route family, the requests sync may send in one window of the family's bucket.
    pub families: BTreeMap<String, u64>,
}

impl SyncCaps {
    /// Whether no cap is set.
    pub fn is_empty(&self) -> bool {
        self.shares.is_empty() && self.families.is_empty()
    }
}

/// One bucket's window as the governor last read it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Window {
    /// The window's limit.
    pub limit: u64,
    /// What remained.
    pub remaining: u64,
    /// When it resets.
    pub reset_at: Timestamp,
}

/// Which cap holds a request back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapReason {
    /// The bucket's window is used up to sync's share.
    Share {
        /// The bucket.
        bucket: String,
        /// The share in per mille of the limit (700: 70 %).
        per_mille: u32,
        /// The window's limit.
        limit: u64,
        /// What the window has used.
        used: u64,
    },
    /// The family sent its cap of requests in this window.
    Family {
        /// The route family.
        family: String,
        /// Its cap per window.
        cap: u64,
    },
}

impl fmt::Display for CapReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            CapReason::Share {
                bucket,
                per_mille,
                limit,
                used,
            } => {
                let percent = f64::from(*per_mille) / 10.0;
                write!(
                    f,
                    "sync's cap: at most {percent} % of {bucket} per window ({used} of {limit} used)"
                )
            }
            CapReason::Family { family, cap } => {
                write!(f, "sync's cap: at most {cap} {family} requests per window")
            }
        }
    }
}

/// `share` in per mille, rounded.
#[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss)]
fn per_mille(share: f64) -> u32 {
    (share.clamp(0.0, 1.0) * 1000.0).round() as u32
}

/// Whether a request of `family` costing `cost` from `bucket` may go now: `None`, or the
/// window's reset with the cap that holds it back. `family_sent` is what sync sent of the
/// family in this window.
pub fn check(
    caps: &SyncCaps,
    bucket: &str,
    family: &str,
    cost: u64,
    window: Option<Window>,
    family_sent: u64,
    now: Timestamp,
) -> Option<(Timestamp, CapReason)> {
    let window = window.filter(|w| w.reset_at > now && w.limit > 0)?;
    if let Some(&share) = caps.shares.get(bucket) {
        let used = window.limit.saturating_sub(window.remaining);
        #[allow(
            clippy::cast_precision_loss,
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss
        )]
        let allowed = (share * window.limit as f64).floor() as u64;
        if used.saturating_add(cost.max(1)) > allowed {
            return Some((
                window.reset_at,
                CapReason::Share {
                    bucket: bucket.to_owned(),
                    per_mille: per_mille(share),
                    limit: window.limit,
                    used,
                },
            ));
        }
    }
    if let Some(&cap) = caps.families.get(family)
        && family_sent >= cap
    {
        return Some((
            window.reset_at,
            CapReason::Family {
                family: family.to_owned(),
                cap,
            },
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).unwrap_or(Timestamp::UNIX_EPOCH)
    }

    fn caps(share: Option<f64>, family: Option<u64>) -> SyncCaps {
        SyncCaps {
            shares: share.into_iter().map(|s| ("core".to_owned(), s)).collect(),
            families: family
                .into_iter()
                .map(|c| ("issues".to_owned(), c))
                .collect(),
        }
    }

    fn window(remaining: u64) -> Option<Window> {
        Some(Window {
            limit: 5000,
            remaining,
            reset_at: t(600),
        })
    }

    #[test]
    fn a_share_holds_the_window_at_it_until_the_reset() {
        let c = caps(Some(0.7), None);
        // 3,499 used: one more request reaches 3,500 = 70 %.
        assert_eq!(check(&c, "core", "issues", 1, window(1501), 0, t(0)), None);
        let (until, reason) =
            check(&c, "core", "issues", 1, window(1500), 0, t(0)).expect("capped");
        assert_eq!(until, t(600));
        assert_eq!(
            reason.to_string(),
            "sync's cap: at most 70 % of core per window (3500 of 5000 used)"
        );
        // Another bucket is not capped; nor is any bucket without a reading, or after reset.
        assert_eq!(check(&c, "graphql", "issues", 1, window(0), 0, t(0)), None);
        assert_eq!(check(&c, "core", "issues", 1, None, 0, t(0)), None);
        assert_eq!(check(&c, "core", "issues", 1, window(0), 0, t(600)), None);
    }

    #[test]
    fn a_family_cap_counts_what_sync_sent_in_the_window() {
        let c = caps(None, Some(100));
        assert_eq!(check(&c, "core", "issues", 1, window(4000), 99, t(0)), None);
        let (until, reason) =
            check(&c, "core", "issues", 1, window(4000), 100, t(0)).expect("capped");
        assert_eq!(until, t(600));
        assert_eq!(
            reason.to_string(),
            "sync's cap: at most 100 issues requests per window"
        );
        assert_eq!(
            check(&c, "core", "pull_requests", 1, window(4000), 100, t(0)),
            None
        );
    }

    proptest! {
        /// With a share set, a granted request never takes the window's use past it.
        #[test]
        fn a_granted_request_stays_within_the_share(
            share in 0.01f64..=1.0,
            limit in 1u64..10_000,
            used_fraction in 0.0f64..=1.0,
            cost in 1u64..50,
        ) {
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
            let used = ((limit as f64) * used_fraction) as u64;
            let w = Some(Window { limit, remaining: limit - used, reset_at: t(60) });
            let c = caps(Some(share), None);
            if check(&c, "core", "x", cost, w, 0, t(0)).is_none() {
                #[allow(clippy::cast_precision_loss)]
                let after = (used + cost) as f64;
                #[allow(clippy::cast_precision_loss)]
                let bound = share * limit as f64;
                prop_assert!(after <= bound + 1e-9);
            }
        }
    }
}
