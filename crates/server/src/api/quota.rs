//! `GET /api/quota` — every identity's buckets as they stand, the credentials that spend
//! them and the shared-quota warning — and `GET /api/quota/{host}/{subject}/history`, one
//! bucket's remaining since an instant downsampled to at most one slot per column a chart
//! draws, with the identity's rate-limit events counted per slot and by who decided the wait
//! (the chart's marks).

use crate::refusal::ApiPath;
use axum::Json;
use axum::extract::{RawQuery, State};
use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_store::quota_history::marks::{MarkCounts, MarkSlot};
use headroom_store::quota_history::{BucketKey, BucketNow, HistoryPoint};
use headroom_store::{SubjectKind, SyncRun, SyncRunStatus};
use serde::Serialize;

use crate::ApiError;
use crate::api::DashboardState;
use crate::api::params;
use crate::dashboard::held::{self, Hold};
use crate::dashboard::words;

/// Slots a history is cut into at most: one per column a chart draws.
pub const HISTORY_POINTS: i64 = crate::dashboard::chart::PLOT_WIDTH as i64;
/// The history's window when `since` is absent.
pub const DEFAULT_HISTORY: SignedDuration = SignedDuration::from_secs(3600);
/// Sync runs read to count the ones waiting per identity.
const RUNS_SCANNED: u32 = 200;

/// One credential that spends an identity's quota (never the token: its fingerprint).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct CredentialView {
    /// A prefix of the token's SHA-256.
    pub fingerprint: String,
    /// Who owns it.
    pub owner: String,
    /// When it was last used.
    #[schema(value_type = String, format = DateTime)]
    pub last_seen_at: Timestamp,
}

/// The governor's hold on a bucket that keeps sync runs waiting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct HeldBack {
    /// The latest window's hold (the largest need among the runs it holds).
    pub hold: Hold,
    /// Sync runs, pending or hibernating, it holds back.
    pub runs: u64,
}

/// One bucket with its wait in words.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct BucketView {
    /// The bucket as it stands.
    #[serde(flatten)]
    pub now: BucketNow,
    /// Why work on it waits, in words with UTC clock times (none when it does not).
    pub wait: Option<String>,
    /// The governor's hold on it that keeps sync runs waiting, when one does.
    pub held_back: Option<HeldBack>,
    /// The reading's reset is past: its numbers are the old window's, and no reading of the
    /// new window came yet.
    pub reset_passed: bool,
}

/// One quota identity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct IdentityQuota {
    /// The API host.
    pub host: String,
    /// The subject label (`user:alice`, `installation:42`, `ip:ADDR`).
    pub subject: String,
    /// How a person names it ("alice on api.github.com").
    pub name: String,
    /// Its buckets, by name.
    pub buckets: Vec<BucketView>,
    /// The stored credentials that spend it, oldest first.
    pub credentials: Vec<CredentialView>,
    /// How many stored credentials share it.
    pub credentials_sharing: u64,
    /// Said where several credentials share it.
    pub shared_quota_warning: Option<String>,
    /// Sync runs on it that are pending or hibernating.
    pub runs_waiting: u64,
}

/// The whole `/api/quota` document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, utoipa::ToSchema)]
pub struct QuotaSnapshot {
    /// When it was read.
    #[schema(value_type = String, format = DateTime)]
    pub captured_at: Timestamp,
    /// Every identity with a reading, by host and subject.
    pub identities: Vec<IdentityQuota>,
}

/// A subject label split into the credential table's kind and owner.
pub fn subject_parts(subject: &str) -> Option<(SubjectKind, &str)> {
    let (kind, owner) = subject.split_once(':')?;
    let kind = match kind {
        "user" => SubjectKind::User,
        "installation" => SubjectKind::Installation,
        "ip" => SubjectKind::Ip,
        _ => return None,
    };
    Some((kind, owner))
}

/// Reads the snapshot at `now`.
pub async fn snapshot(state: &DashboardState, now: Timestamp) -> Result<QuotaSnapshot, ApiError> {
    let latest = state
        .history
        .latest_quota_readings(now - state.settings.live_window)
        .await?;
    let runs = state.history.sync_runs_page(None, RUNS_SCANNED).await?;
    let waiting: Vec<&SyncRun> = runs
        .iter()
        .filter(|run| {
            matches!(
                run.status,
                SyncRunStatus::Pending | SyncRunStatus::Hibernating
            )
        })
        .collect();
    let holds = holds_of(state, &waiting).await?;
    let mut identities: Vec<IdentityQuota> = Vec::new();
    for bucket in latest {
        let r = &bucket.latest.reading;
        let same = |i: &IdentityQuota| i.host == r.host && i.subject == r.subject;
        if !identities.iter().any(same) {
            let count = waiting
                .iter()
                .filter(|run| run.host == r.host && run.subject == r.subject)
                .count() as u64;
            identities.push(identity(state, &r.host, &r.subject, count).await?);
        }
        let held_back = held_back(&holds, &r.host, &r.subject, &r.bucket);
        let reset_passed = r.reset_at.is_some_and(|reset| reset <= now);
        if let Some(identity) = identities.iter_mut().find(|i| same(i)) {
            identity.buckets.push(BucketView {
                now: bucket,
                wait: None,
                held_back,
                reset_passed,
            });
        }
    }
    for identity in &mut identities {
        identity.shared_quota_warning = words::shared_quota_warning(identity);
        let waits = words::bucket_waits(&identity.buckets, now);
        for (bucket, wait) in identity.buckets.iter_mut().zip(waits) {
            bucket.wait = wait.map(|w| w.plain(now));
        }
    }
    Ok(QuotaSnapshot {
        captured_at: now,
        identities,
    })
}

/// The governor's holds each waiting run's deferred checkpoints recorded: (host, subject,
/// the run's holds).
async fn holds_of(
    state: &DashboardState,
    waiting: &[&SyncRun],
) -> Result<Vec<(String, String, Vec<Hold>)>, ApiError> {
    let mut out = Vec::new();
    for run in waiting {
        let checkpoints = state.store.checkpoints(run.id).await?;
        let details = held::wait_details(run, &checkpoints);
        let holds = held::reasons(details.iter().map(String::as_str)).holds;
        if !holds.is_empty() {
            out.push((run.host.clone(), run.subject.clone(), holds));
        }
    }
    Ok(out)
}

/// The hold on one bucket over the runs it keeps waiting: the latest window's, the largest
/// need in it.
fn held_back(
    holds: &[(String, String, Vec<Hold>)],
    host: &str,
    subject: &str,
    bucket: &str,
) -> Option<HeldBack> {
    let on_bucket: Vec<&Hold> = holds
        .iter()
        .filter(|(h, s, _)| h == host && s == subject)
        .filter_map(|(_, _, holds)| holds.iter().find(|hold| hold.bucket == bucket))
        .collect();
    let hold = on_bucket
        .iter()
        .max_by_key(|hold| (hold.reopens_at, hold.needed))?;
    Some(HeldBack {
        hold: (*hold).clone(),
        runs: on_bucket.len() as u64,
    })
}

async fn identity(
    state: &DashboardState,
    host: &str,
    subject: &str,
    runs_waiting: u64,
) -> Result<IdentityQuota, ApiError> {
    let (credentials, sharing) = match subject_parts(subject) {
        Some((kind, owner)) => (
            state.store.credentials_of(host, kind, owner).await?,
            state
                .store
                .count_credentials_sharing(host, kind, owner)
                .await?,
        ),
        None => (Vec::new(), 0),
    };
    Ok(IdentityQuota {
        host: host.to_owned(),
        subject: subject.to_owned(),
        name: words::identity_name(host, subject),
        buckets: Vec::new(),
        credentials: credentials
            .into_iter()
            .map(|c| CredentialView {
                fingerprint: c.fingerprint,
                owner: c.owner_login,
                last_seen_at: c.last_seen_at,
            })
            .collect(),
        credentials_sharing: sharing,
        shared_quota_warning: None,
        runs_waiting,
    })
}

/// `GET /api/quota`.
#[utoipa::path(
    get,
    path = "/api/quota",
    operation_id = "quota_identities",
    tag = "quota",
    responses(
        (status = 200, description = "Every identity's buckets as they stand", body = QuotaSnapshot),
        (status = 400, description = "A parameter was refused (unknown, repeated or malformed)", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
pub async fn show(
    State(state): State<DashboardState>,
    RawQuery(raw): RawQuery,
) -> Result<Json<QuotaSnapshot>, ApiError> {
    params::pairs(raw.as_deref(), &[])?;
    let now = state.clock.now();
    Ok(Json(snapshot(&state, now).await?))
}

/// The parsed history query.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoryQuery {
    /// The bucket.
    pub bucket: String,
    /// From when.
    pub since: Timestamp,
}

/// Parses `bucket` (required) and `since` (default: an hour before `now`, not after it).
pub fn parse_history(raw: Option<&str>, now: Timestamp) -> Result<HistoryQuery, ApiError> {
    let mut bucket = None;
    let mut since = now - DEFAULT_HISTORY;
    for (name, value) in params::pairs(raw, &["bucket", "since"])? {
        match name.as_str() {
            "bucket" if !value.is_empty() => bucket = Some(value),
            "bucket" => {
                return Err(params::bad(
                    "invalid_parameter",
                    "bucket",
                    "bucket must not be empty".into(),
                ));
            }
            _ => since = params::instant("since", &value)?,
        }
    }
    let bucket = bucket.ok_or_else(|| {
        params::bad(
            "missing_parameter",
            "bucket",
            "bucket is required (core, graphql, search …)".into(),
        )
    })?;
    if since > now {
        return Err(params::bad(
            "invalid_parameter",
            "since",
            format!("since ({since}) is in the future"),
        ));
    }
    Ok(HistoryQuery { bucket, since })
}

/// The slot length that cuts `[since, now]` into at most [`HISTORY_POINTS`] slots: whole
/// seconds, and whole minutes once a slot lasts a minute — those slots are read from the
/// per-minute summaries counted from `since`'s minute, up to a minute before `since`, which
/// the length leaves room for.
pub fn history_step(since: Timestamp, now: Timestamp) -> SignedDuration {
    const SECOND: u128 = 1000;
    const MINUTE: u128 = 60 * SECOND;
    let span = u128::try_from(now.duration_since(since).as_millis()).unwrap_or(0);
    let points = u128::from(crate::dashboard::chart::PLOT_WIDTH);
    // Strictly longer than span / points: an instant at `now` still falls in the last slot.
    let mut step = (span / points + 1).max(SECOND);
    step = step.div_ceil(SECOND) * SECOND;
    if step >= MINUTE {
        step = (span + MINUTE).div_ceil(points).div_ceil(MINUTE) * MINUTE;
    }
    SignedDuration::from_millis(i64::try_from(step).unwrap_or(i64::MAX))
}

/// `GET /api/quota/{host}/{subject}/history`.
#[derive(Debug, Clone, PartialEq, Serialize, utoipa::ToSchema)]
pub struct History {
    /// The API host.
    pub host: String,
    /// The subject label.
    pub subject: String,
    /// The bucket.
    pub bucket: String,
    /// From when.
    #[schema(value_type = String, format = DateTime)]
    pub since: Timestamp,
    /// Until when.
    #[schema(value_type = String, format = DateTime)]
    pub until: Timestamp,
    /// Each slot's length.
    pub step_seconds: f64,
    /// The slots with readings, oldest first (at most one per column a chart draws).
    pub points: Vec<HistoryPoint>,
    /// The slots with rate-limit events of the identity on the bucket (or on no bucket),
    /// oldest first: the provider's refusals apart from headroom's own waits.
    pub marks: Vec<MarkSlot>,
    /// The marks added up.
    pub totals: MarkCounts,
}

/// Reads one bucket's history.
pub async fn history_of(
    state: &DashboardState,
    key: BucketKey<'_>,
    since: Timestamp,
    now: Timestamp,
) -> Result<History, ApiError> {
    let step = history_step(since, now);
    let mut points = state.history.quota_history(key, since, step).await?;
    // A reading stamped after `now` (another process's clock ahead) would add a slot.
    points.retain(|p| p.at <= now);
    let marks = state
        .history
        .observation_marks(key, since, now, step)
        .await?;
    let mut totals = MarkCounts::default();
    for mark in &marks {
        totals.add(&mark.counts);
    }
    Ok(History {
        host: key.host.to_owned(),
        subject: key.subject.to_owned(),
        bucket: key.bucket.to_owned(),
        since,
        until: now,
        step_seconds: step.as_secs_f64(),
        points,
        marks,
        totals,
    })
}

/// `GET /api/quota/{host}/{subject}/history?bucket=&since=`.
#[utoipa::path(
    get,
    path = "/api/quota/{host}/{subject}/history",
    tag = "quota",
    params(
        ("host" = String, Path, description = "The identity's API host (api.github.com)"),
        ("subject" = String, Path, description = "The identity's subject label, URL-encoded: `user:alice`, `installation:42`, `ip:ADDR`"),
        ("bucket" = String, Query, description = "The bucket (core, graphql, search …)"),
        ("since" = Option<String>, Query, description = "From when (RFC 3339); an hour ago when absent, never in the future"),
    ),
    responses(
        (status = 200, description = "The bucket's remaining over time, at most one slot per column a chart draws, with the identity's rate-limit events counted per slot: the provider's refusals apart from headroom's own waits", body = History),
        (status = 400, description = "A parameter was refused (unknown, repeated or malformed), or a path segment does not decode", body = crate::ErrorBody),
        (status = 503, description = "The database did not answer", body = crate::ErrorBody),
    )
)]
pub async fn history(
    State(state): State<DashboardState>,
    ApiPath((host, subject)): ApiPath<(String, String)>,
    RawQuery(raw): RawQuery,
) -> Result<Json<History>, ApiError> {
    let now = state.clock.now();
    let query = parse_history(raw.as_deref(), now)?;
    let key = BucketKey {
        host: &host,
        subject: &subject,
        bucket: &query.bucket,
    };
    Ok(Json(history_of(&state, key, query.since, now).await?))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        Timestamp::from_second(1_800_000_000 + secs).expect("valid")
    }

    #[test]
    fn the_history_query_is_strict() {
        let q = parse_history(Some("bucket=core"), t(7200)).expect("ok");
        assert_eq!((q.bucket.as_str(), q.since), ("core", t(3600)));
        assert!(parse_history(None, t(0)).is_err());
        assert!(parse_history(Some("bucket="), t(0)).is_err());
        assert!(parse_history(Some("bucket=core&limit=3"), t(0)).is_err());
        assert!(parse_history(Some("bucket=core&since=1800000100000"), t(0)).is_err());
    }

    #[test]
    fn a_history_has_at_most_its_points_and_slots_of_a_second_at_least() {
        assert_eq!(history_step(t(0), t(3600)), SignedDuration::from_secs(13));
        assert_eq!(history_step(t(0), t(10)), SignedDuration::from_secs(1));
        assert_eq!(
            history_step(t(0), t(6 * 3600)),
            SignedDuration::from_secs(120)
        );
        assert_eq!(
            history_step(t(0), t(86_400)),
            SignedDuration::from_secs(300)
        );
        // Every instant of the span, minute-aligned start included, falls in a slot below
        // the bound.
        for span in [
            1, 59, 3599, 3600, 17_999, 18_000, 21_601, 86_399, 86_400, 604_800,
        ] {
            let since = t(17);
            let step = history_step(since, t(17 + span)).as_millis();
            let start_ms = i128::from(since.as_millisecond());
            let origin = if step >= 60_000 {
                start_ms - start_ms.rem_euclid(60_000)
            } else {
                start_ms
            };
            let last = (i128::from(t(17 + span).as_millisecond()) - origin) / step;
            assert!(last < i128::from(HISTORY_POINTS), "{span} s: slot {last}");
        }
    }

    #[test]
    fn subject_labels_split_into_kind_and_owner() {
        assert_eq!(
            subject_parts("user:alice"),
            Some((SubjectKind::User, "alice"))
        );
        assert_eq!(
            subject_parts("installation:42"),
            Some((SubjectKind::Installation, "42"))
        );
        assert_eq!(subject_parts("alice"), None);
    }
}
