//! The values the store reads and writes, independent of the backend.

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::quota::{QuotaKey, Subject};
use headroom_core::signal::{Dimension, LimitReason, Provider};
use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};

/// Epoch milliseconds, as stored.
pub(crate) fn ms(t: Timestamp) -> i64 {
    t.as_millisecond()
}

/// Stored epoch milliseconds back to an instant.
pub(crate) fn from_ms(column: &'static str, value: i64) -> Result<Timestamp> {
    Timestamp::from_millisecond(value).map_err(|e| StoreError::corrupt(column, e))
}

pub(crate) fn from_opt_ms(column: &'static str, value: Option<i64>) -> Result<Option<Timestamp>> {
    value.map(|v| from_ms(column, v)).transpose()
}

pub(crate) fn to_u64(column: &'static str, value: i64) -> Result<u64> {
    u64::try_from(value).map_err(|e| StoreError::corrupt(column, e))
}

pub(crate) fn to_i64(field: &'static str, value: u64) -> Result<i64> {
    i64::try_from(value).map_err(|_| StoreError::Invalid {
        field,
        problem: format!("{value} does not fit a 64-bit signed column"),
    })
}

/// Which database a store runs on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Backend {
    /// An SQLite file (the default).
    Sqlite,
    /// A PostgreSQL server.
    Postgres,
}

/// What kind of identity owns a credential's quota.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum SubjectKind {
    /// A user (the token's owner).
    User,
    /// A GitHub App installation.
    Installation,
    /// No token: the outbound IP.
    Ip,
    /// A LaunchDarkly account.
    Account,
    /// A Jira site (API-token traffic).
    Site,
    /// An OAuth app (Jira's points).
    App,
}

impl SubjectKind {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            SubjectKind::User => "user",
            SubjectKind::Installation => "installation",
            SubjectKind::Ip => "ip",
            SubjectKind::Account => "account",
            SubjectKind::Site => "site",
            SubjectKind::App => "app",
        }
    }

    pub(crate) fn parse(value: &str) -> Result<Self> {
        match value {
            "user" => Ok(SubjectKind::User),
            "installation" => Ok(SubjectKind::Installation),
            "ip" => Ok(SubjectKind::Ip),
            "account" => Ok(SubjectKind::Account),
            "site" => Ok(SubjectKind::Site),
            "app" => Ok(SubjectKind::App),
            other => Err(StoreError::corrupt(
                "subject_kind",
                format!("unknown kind {other:?}"),
            )),
        }
    }

    /// The kind and id of a quota subject, as stored.
    pub fn of(subject: &Subject) -> (SubjectKind, String) {
        match subject {
            Subject::User(login) => (SubjectKind::User, login.to_string()),
            Subject::Installation(id) => (SubjectKind::Installation, id.to_string()),
            Subject::Ip(ip) => (SubjectKind::Ip, ip.to_string()),
            Subject::Account(id) => (SubjectKind::Account, id.to_string()),
            Subject::Site(host) => (SubjectKind::Site, host.to_string()),
            Subject::App(id) => (SubjectKind::App, id.to_string()),
        }
    }
}

/// A quota identity's subject as one stored string: `user:alice`, `installation:42`,
/// `ip:203.0.113.9`.
pub fn subject_label(subject: &Subject) -> String {
    let (kind, id) = SubjectKind::of(subject);
    format!("{}:{id}", kind.as_str())
}

/// A credential as headroom saw it: never the token, only a fingerprint of it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CredentialSeen {
    /// The API host, e.g. `api.github.com`.
    pub host: String,
    /// A prefix of the SHA-256 of the token, in lowercase hex (8 to 64 characters).
    pub fingerprint: String,
    /// What kind of identity owns it.
    pub subject_kind: SubjectKind,
    /// The owner's login (or installation id).
    pub owner_login: String,
    /// When it was seen.
    pub seen_at: Timestamp,
}

/// A stored credential.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Credential {
    /// Surrogate key.
    pub id: i64,
    /// The API host.
    pub host: String,
    /// The token's fingerprint.
    pub fingerprint: String,
    /// The kind of owner.
    pub subject_kind: SubjectKind,
    /// The owner's login.
    pub owner_login: String,
    /// First seen.
    pub first_seen_at: Timestamp,
    /// Last seen.
    pub last_seen_at: Timestamp,
}

impl Credential {
    /// The quota subject this credential spends.
    pub fn subject(&self) -> Result<Subject> {
        Ok(match self.subject_kind {
            SubjectKind::User => Subject::User(self.owner_login.as_str().into()),
            SubjectKind::Ip => Subject::Ip(self.owner_login.as_str().into()),
            SubjectKind::Account => Subject::Account(self.owner_login.as_str().into()),
            SubjectKind::Site => Subject::Site(self.owner_login.as_str().into()),
            SubjectKind::App => Subject::App(self.owner_login.as_str().into()),
            SubjectKind::Installation => Subject::Installation(
                self.owner_login
                    .parse()
                    .map_err(|e| StoreError::corrupt("owner_login", e))?,
            ),
        })
    }
}

/// Checks that a fingerprint is a hex prefix and not, by mistake, a token.
pub(crate) fn check_fingerprint(fingerprint: &str) -> Result<()> {
    let ok = (8..=64).contains(&fingerprint.len())
        && fingerprint
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if ok {
        Ok(())
    } else {
        Err(StoreError::Invalid {
            field: "fingerprint",
            problem: "must be 8 to 64 lowercase hex characters of a SHA-256 (never a token)"
                .to_owned(),
        })
    }
}

/// The fingerprint under which unauthenticated requests keep their ETags.
pub const ANONYMOUS_FINGERPRINT: &str = "anonymous";

/// A stored validator for a conditional request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredEtag {
    /// The credential's fingerprint, or [`ANONYMOUS_FINGERPRINT`].
    pub credential_fingerprint: String,
    /// The request URL (stored redacted).
    pub url: String,
    /// The `ETag` the response carried.
    pub etag: String,
    /// The `Last-Modified` it carried, if any.
    pub last_modified: Option<String>,
    /// When it was stored.
    pub stored_at: Timestamp,
}

/// One or more physical round trips to count.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageRecord {
    /// The quota identity.
    pub key: QuotaKey,
    /// The route family (e.g. `events`, `search_users`, `org_members`).
    pub route_family: String,
    /// The budget dimension.
    pub dimension: Dimension,
    /// Round trips (retries and redirect hops each count one).
    pub requests: u64,
    /// Units spent (GraphQL points; 1 per REST request).
    pub units: u64,
    /// When.
    pub at: Timestamp,
    /// The counting window the record falls in (its start is `at` floored to it).
    pub window: SignedDuration,
}

impl UsageRecord {
    /// The start of the window `at` falls in.
    pub fn window_start(&self) -> Result<Timestamp> {
        let window_ms = i64::try_from(self.window.as_millis()).unwrap_or(i64::MAX);
        if window_ms <= 0 {
            return Err(StoreError::Invalid {
                field: "window",
                problem: "must be positive".to_owned(),
            });
        }
        let at = ms(self.at);
        from_ms("window_start_at_ms", at - at.rem_euclid(window_ms))
    }
}

/// Usage added up per route family and dimension.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageTotal {
    /// The route family.
    pub route_family: String,
    /// The dimension's stored name (see [`Dimension::as_str`]).
    pub dimension: String,
    /// Round trips.
    pub requests: u64,
    /// Units.
    pub units: u64,
    /// The first window counted.
    pub first_window_start: Timestamp,
    /// The latest record.
    pub last_recorded_at: Timestamp,
}

/// How a rate-limit observation came about.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ObservationKind {
    /// The governor deferred work before sending anything.
    Deferred,
    /// The origin refused a request with a rate limit.
    Refused,
    /// A sync run went to sleep until its quota reopens.
    Hibernated,
}

impl ObservationKind {
    /// The stored text.
    pub fn as_str(&self) -> &'static str {
        match self {
            ObservationKind::Deferred => "deferred",
            ObservationKind::Refused => "refused",
            ObservationKind::Hibernated => "hibernated",
        }
    }
}

/// A normalized rate-limit signal worth keeping (never raw headers or error text).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimitObservation {
    /// The provider.
    pub provider: Provider,
    /// The quota identity.
    pub key: QuotaKey,
    /// The credential used, if any.
    pub credential_fingerprint: Option<String>,
    /// The sync run it happened in, if any.
    pub sync_run_id: Option<i64>,
    /// The bucket the response named.
    pub bucket: Option<String>,
    /// The route family, when attribution is certain.
    pub route_family: Option<String>,
    /// Set (e.g. `ambiguous_dimension`) when the route family could not be attributed.
    pub route_family_attribution: Option<String>,
    /// The dimension.
    pub dimension: Option<Dimension>,
    /// Why the request was refused, if it was.
    pub reason: Option<LimitReason>,
    /// The server's requested wait.
    pub retry_after: Option<SignedDuration>,
    /// The window's reset.
    pub reset_at: Option<Timestamp>,
    /// The window's limit.
    pub limit: Option<u64>,
    /// What remained.
    pub remaining: Option<u64>,
    /// What was used.
    pub used: Option<u64>,
    /// Deferred before sending, refused by the origin, or a run hibernating.
    pub event_kind: Option<ObservationKind>,
    /// The governor's reason when it deferred the work (`WaitReason::as_str`).
    pub wait_reason: Option<String>,
    /// The provider's request id.
    pub request_id: Option<String>,
    /// When it was observed.
    pub observed_at: Timestamp,
}

/// A stored observation: its id and what was stored. The identity comes back as its host and
/// [`subject_label`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct StoredObservation {
    /// Surrogate key.
    pub id: i64,
    /// The provider's stored name.
    pub provider: String,
    /// The host.
    pub host: String,
    /// The subject label.
    pub subject: String,
    /// The credential's fingerprint.
    pub credential_fingerprint: Option<String>,
    /// The sync run.
    pub sync_run_id: Option<i64>,
    /// The bucket.
    pub bucket: Option<String>,
    /// The route family.
    pub route_family: Option<String>,
    /// The attribution note.
    pub route_family_attribution: Option<String>,
    /// The dimension's stored name.
    pub dimension: Option<String>,
    /// The reason's stored name.
    pub reason: Option<String>,
    /// Seconds to wait.
    pub retry_after_secs: Option<u64>,
    /// The reset.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub reset_at: Option<Timestamp>,
    /// The limit.
    pub limit: Option<u64>,
    /// Remaining.
    pub remaining: Option<u64>,
    /// Used.
    pub used: Option<u64>,
    /// The request id.
    pub request_id: Option<String>,
    /// `deferred`, `refused` or `hibernated`, when recorded.
    pub event_kind: Option<String>,
    /// The governor's reason for a deferral.
    pub wait_reason: Option<String>,
    /// When.
    #[schema(value_type = String, format = DateTime)]
    pub observed_at: Timestamp,
}

/// The provider [`provider_name`] names, if it names one.
pub fn provider_from_name(name: &str) -> Option<Provider> {
    [
        Provider::GitHub,
        Provider::GitLab,
        Provider::Jira,
        Provider::Linear,
        Provider::LaunchDarkly,
    ]
    .into_iter()
    .find(|p| provider_name(*p) == name)
}

pub fn provider_name(p: Provider) -> &'static str {
    match p {
        Provider::GitHub => "github",
        Provider::GitLab => "gitlab",
        Provider::Jira => "jira",
        Provider::Linear => "linear",
        Provider::LaunchDarkly => "launchdarkly",
    }
}

/// The status of a sync run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum SyncRunStatus {
    /// Created, not started.
    Pending,
    /// A worker is running it.
    Running,
    /// Persisted until `not_before`.
    Hibernating,
    /// Finished.
    Done,
    /// Failed, with a reason.
    Failed,
}

impl SyncRunStatus {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            SyncRunStatus::Pending => "pending",
            SyncRunStatus::Running => "running",
            SyncRunStatus::Hibernating => "hibernating",
            SyncRunStatus::Done => "done",
            SyncRunStatus::Failed => "failed",
        }
    }

    pub(crate) fn parse(value: &str) -> Result<Self> {
        Ok(match value {
            "pending" => SyncRunStatus::Pending,
            "running" => SyncRunStatus::Running,
            "hibernating" => SyncRunStatus::Hibernating,
            "done" => SyncRunStatus::Done,
            "failed" => SyncRunStatus::Failed,
            other => return Err(StoreError::corrupt("status", format!("unknown {other:?}"))),
        })
    }
}

/// A sync run to create.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct NewSyncRun {
    /// What is synced (e.g. `org`).
    pub kind: String,
    /// Which one (e.g. the organization's login).
    pub target: String,
    /// The quota identity it spends.
    pub key: QuotaKey,
    /// The stages asked for, if restricted.
    pub requested_stages: Option<Vec<String>>,
    /// The credential it is created with, whose owner must be `key`'s subject (`None`: not
    /// bound yet; the first resume binds it).
    pub credential: Option<crate::CredentialUsed>,
    /// When.
    pub created_at: Timestamp,
}

/// A sync run: read it, change the mutable fields, and [`crate::Store::save_sync_run`] it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct SyncRun {
    /// The run id.
    pub id: i64,
    /// What is synced.
    pub kind: String,
    /// Which one.
    pub target: String,
    /// The API host.
    pub host: String,
    /// The subject label.
    pub subject: String,
    /// Where the run stands.
    pub status: SyncRunStatus,
    /// The stages asked for.
    pub requested_stages: Option<Vec<String>>,
    /// Not to be woken before then.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub not_before: Option<Timestamp>,
    /// Deferrals so far.
    pub deferral_count: u32,
    /// The first deferral.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub first_deferred_at: Option<Timestamp>,
    /// Time spent hibernating.
    #[schema(value_type = String)]
    pub total_wait: SignedDuration,
    /// Why it failed.
    pub failure_reason: Option<String>,
    /// The run summary.
    pub summary: Option<serde_json::Value>,
    /// The worker holding the run (see [`crate::Store::claim_sync_run`]); not written by
    /// [`crate::Store::save_sync_run`].
    pub claimed_by: Option<String>,
    /// When that claim lapses.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub claim_expires_at: Option<Timestamp>,
    /// Created.
    #[schema(value_type = String, format = DateTime)]
    pub created_at: Timestamp,
    /// First started.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub started_at: Option<Timestamp>,
    /// Finished.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub finished_at: Option<Timestamp>,
    /// Last saved.
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
    /// The credential it is bound to (not written by [`crate::Store::save_sync_run`]; see
    /// [`crate::Store::bind_sync_run_credential`]).
    pub credential: crate::sync::binding::CredentialBinding,
}

/// Where one (stage, scope) of a run stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CheckpointStatus {
    /// Not started.
    Pending,
    /// Started; `page_cursor` says where to continue.
    Running,
    /// Finished: skipped on resume.
    Done,
    /// A dependency failed: carried to the next run.
    Blocked,
    /// Stopped by a wait or a transient failure: resumed later.
    Deferred,
}

impl CheckpointStatus {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            CheckpointStatus::Pending => "pending",
            CheckpointStatus::Running => "running",
            CheckpointStatus::Done => "done",
            CheckpointStatus::Blocked => "blocked",
            CheckpointStatus::Deferred => "deferred",
        }
    }

    pub(crate) fn parse(value: &str) -> Result<Self> {
        Ok(match value {
            "pending" => CheckpointStatus::Pending,
            "running" => CheckpointStatus::Running,
            "done" => CheckpointStatus::Done,
            "blocked" => CheckpointStatus::Blocked,
            "deferred" => CheckpointStatus::Deferred,
            other => return Err(StoreError::corrupt("status", format!("unknown {other:?}"))),
        })
    }
}

/// A stored checkpoint.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Checkpoint {
    /// The run.
    pub sync_run_id: i64,
    /// The stage's name.
    pub stage: String,
    /// `""` for a once-per-run stage, else the scope (e.g. a repository's full name).
    pub scope: String,
    /// Where it stands.
    pub status: CheckpointStatus,
    /// The cursor of the next page, if any.
    pub page_cursor: Option<String>,
    /// Pages committed so far.
    pub pages_done: u64,
    /// Rows committed so far.
    pub rows_written: u64,
    /// A note (why blocked or deferred).
    pub detail: Option<String>,
    /// Last written.
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: Timestamp,
}

/// A checkpoint write: status and cursor replace the stored ones; the counts are added.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckpointUpdate {
    /// The run.
    pub sync_run_id: i64,
    /// The stage.
    pub stage: String,
    /// The scope (`""` for once per run).
    pub scope: String,
    /// The new status.
    pub status: CheckpointStatus,
    /// The cursor of the next page (`None` when there is none).
    pub page_cursor: Option<String>,
    /// Pages to add.
    pub pages_added: u64,
    /// Rows to add.
    pub rows_added: u64,
    /// A note.
    pub detail: Option<String>,
    /// When.
    pub at: Timestamp,
}

/// A per-repository watermark: the incremental cut between syncs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Watermark {
    /// `issues_collected_at_ms`.
    Issues,
    /// `issue_comments_collected_at_ms`.
    IssueComments,
    /// `pull_requests_collected_at_ms`.
    PullRequests,
    /// `workflow_runs_collected_at_ms`.
    WorkflowRuns,
    /// `check_runs_collected_at_ms`.
    CheckRuns,
    /// `branches_collected_at_ms`.
    Branches,
}

impl Watermark {
    /// Every watermark.
    pub const ALL: [Watermark; 6] = [
        Watermark::Issues,
        Watermark::IssueComments,
        Watermark::PullRequests,
        Watermark::WorkflowRuns,
        Watermark::CheckRuns,
        Watermark::Branches,
    ];

    /// The column it lives in.
    pub fn column(&self) -> &'static str {
        match self {
            Watermark::Issues => "issues_collected_at_ms",
            Watermark::IssueComments => "issue_comments_collected_at_ms",
            Watermark::PullRequests => "pull_requests_collected_at_ms",
            Watermark::WorkflowRuns => "workflow_runs_collected_at_ms",
            Watermark::CheckRuns => "check_runs_collected_at_ms",
            Watermark::Branches => "branches_collected_at_ms",
        }
    }
}

/// What a page write committed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PageWritten {
    /// Rows upserted.
    pub rows: u64,
}

/// Where a feed event came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventOrigin {
    /// Polled from the live `/events` feed.
    Feed,
    /// Imported from a GH Archive file.
    Gharchive,
}

impl EventOrigin {
    /// The stored name.
    pub fn as_str(&self) -> &'static str {
        match self {
            EventOrigin::Feed => "feed",
            EventOrigin::Gharchive => "gharchive",
        }
    }
}

/// An actor as a feed event names it (identity fields only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ActorRef {
    /// GitHub's user id.
    pub github_id: i64,
    /// Login.
    pub login: String,
    /// `display_login`, when the event has one.
    pub display_login: Option<String>,
    /// The detail URL the event carries (the fallback lane fetches it).
    pub url: Option<String>,
    /// Avatar URL.
    pub avatar_url: Option<String>,
}

/// A repository as a feed event names it (identity fields only).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RepositoryRef {
    /// GitHub's repository id.
    pub github_id: i64,
    /// `owner/name`.
    pub full_name: String,
    /// The detail URL the event carries.
    pub url: Option<String>,
}

/// A validated PushEvent to store.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PushEventWrite {
    /// GitHub's event id (the deduplication key).
    pub github_event_id: String,
    /// `payload.push_id`.
    pub github_push_id: Option<i64>,
    /// The actor.
    pub actor: ActorRef,
    /// The repository.
    pub repository: RepositoryRef,
    /// `payload.ref`.
    pub git_ref: String,
    /// `payload.head`.
    pub head_sha: String,
    /// `payload.before`; `None` for the oldest events (2012), which GitHub recorded without it.
    pub before_sha: Option<String>,
    /// `payload.size`, when present.
    pub commit_count: Option<i64>,
    /// `payload.distinct_size`, when present.
    pub distinct_commit_count: Option<i64>,
    /// GitHub's `created_at`.
    pub occurred_at: Timestamp,
    /// When headroom received it.
    pub received_at: Timestamp,
    /// The ingestion run, if any.
    pub ingestion_run_id: Option<i64>,
    /// Feed or archive.
    pub origin: EventOrigin,
    /// The envelope as received.
    pub raw: serde_json::Value,
}

/// A malformed envelope to quarantine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct QuarantinedEvent {
    /// SHA-256 (hex) of the envelope's canonical JSON: the identity.
    pub payload_fingerprint: String,
    /// The event id, when it had one.
    pub github_event_id: Option<String>,
    /// The event type, when it had one.
    pub event_type: Option<String>,
    /// The classification (e.g. `missing_field`).
    pub error_code: String,
    /// What was wrong, in words (stored redacted).
    pub error_message: String,
    /// Feed or archive.
    pub origin: EventOrigin,
    /// When received.
    pub received_at: Timestamp,
    /// The envelope, when it was JSON.
    pub raw: Option<serde_json::Value>,
    /// The line as received, when it was not JSON.
    pub raw_text: Option<String>,
}

/// A stored quarantine row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuarantineRow {
    /// The fingerprint.
    pub payload_fingerprint: String,
    /// The first classification (permanent).
    pub error_code: String,
    /// How often it was seen.
    pub occurrence_count: u64,
    /// First seen.
    pub first_received_at: Timestamp,
    /// Last seen.
    pub last_received_at: Timestamp,
}

/// The feed's view of an actor or repository: identity, enrichment state and activity.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FeedEntity {
    /// GitHub's id.
    pub github_id: i64,
    /// Login (actors) or full name (repositories).
    pub name: String,
    /// `pending`, `complete`, `retryable_failure` or `permanent_failure`.
    pub enrichment_status: crate::feed_state::EnrichmentStatus,
    /// Where in the staged pipeline it rests.
    pub enrichment_stage: crate::feed_state::EnrichmentStage,
    /// First seen in an accepted event.
    pub first_seen_at: Option<Timestamp>,
    /// Last seen in an accepted event.
    pub last_seen_at: Option<Timestamp>,
    /// The latest accepted event's `created_at`.
    pub latest_event_at: Option<Timestamp>,
}

/// A stored push event.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredPushEvent {
    /// GitHub's event id.
    pub github_event_id: String,
    /// The actor's id.
    pub github_actor_id: i64,
    /// The repository's id.
    pub github_repository_id: i64,
    /// The actor's login at the time.
    pub actor_login: String,
    /// The repository's name at the time.
    pub repository_name: String,
    /// The ref.
    pub git_ref: String,
    /// Head.
    pub head_sha: String,
    /// Before (absent from the oldest events).
    pub before_sha: Option<String>,
    /// When it happened on GitHub.
    pub occurred_at: Timestamp,
    /// When stored.
    pub created_at: Timestamp,
    /// The envelope.
    pub raw: serde_json::Value,
}
