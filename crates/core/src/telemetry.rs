//! Every log event headroom emits: its name, the levels it is emitted at, its fields and what it
//! means. This is the only place an event name is spelled: a call site names its event by the
//! constant (`tracing::info!(event = telemetry::IMPORT_STARTED, run_id = %id, files)`), the
//! catalog renders docs/LOGGING.md, and a workspace test (crates/cli/tests/telemetry.rs) holds
//! every `tracing` call in the sources to this catalog: a known constant, a listed level, listed
//! fields, and no event name written as a string literal anywhere else.
//!
//! Emitting stays with `tracing`; the binary's JSON formatter lifts `event` to the front of the
//! line beside `timestamp`, `level` and `service`.

/// A level an event is emitted at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Level {
    /// Something failed and was not retried here.
    Error,
    /// Something unusual that headroom handled.
    Warn,
    /// A step an operator follows.
    Info,
    /// Detail for diagnosis (`RUST_LOG=debug`).
    Debug,
}

impl Level {
    /// The name `tracing` gives the level, lower case (`tracing::warn!`).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Error => "error",
            Self::Warn => "warn",
            Self::Info => "info",
            Self::Debug => "debug",
        }
    }
}

/// One event of the catalog.
#[derive(Debug, Clone, Copy)]
pub struct EventSpec {
    /// The Rust constant that names it.
    pub constant: &'static str,
    /// The `event` field's value.
    pub name: &'static str,
    /// The levels it is emitted at.
    pub levels: &'static [Level],
    /// Its fields besides `event` (span fields such as a run's `run_id` come on top).
    pub fields: &'static [&'static str],
    /// What it means, in a sentence.
    pub about: &'static str,
}

macro_rules! catalog {
    ($( $(#[doc = $doc:literal])+ $konst:ident = $name:literal [$($level:ident),+] [$($field:ident),*] )*) => {
        $( $(#[doc = $doc])+ pub const $konst: &str = $name; )*
        /// Every event, in the order of this file.
        pub const CATALOG: &[EventSpec] = &[$(EventSpec {
            constant: stringify!($konst),
            name: $name,
            levels: &[$(Level::$level),+],
            fields: &[$(stringify!($field)),*],
            about: concat!($($doc),+),
        }),*];
    };
}

catalog! {
    /// A quota governor refused a request before it was sent; nothing went to the provider.
    QUOTA_DENIED = "quota.denied" [Info] [identity, bucket, until, reason]
    /// The exit door learned which identity a credential spends (one `GET /user` per credential).
    IDENTITY_DISCOVERED = "identity.discovered" [Info] [host, fingerprint, subject]
    /// A credential's first request could not be counted against its owner's points (the
    /// governor's store failed); the owner's first minute may go one request over.
    GOVERNOR_CHARGE_FAILED = "governor.charge_failed" [Warn] [error]
    /// A request was not sent: a refusal another request of its identity and route family met
    /// still cools that family down.
    COOLDOWN_DEFERRED = "cooldown.deferred" [Info] [identity, route_family, until, reason]
    /// The recorded refusals could not be read; the door sent as if no cooldown held.
    COOLDOWN_READ_FAILED = "cooldown.read_failed" [Warn] [identity, error]
    /// Recorded refusals whose stored values no longer parse were left out of cooldown gating.
    COOLDOWN_ROWS_SKIPPED = "cooldown.rows_skipped" [Warn] [identity, skipped]
    /// An entity's detail URL (from the event data) is not of its kind's shape: nothing is
    /// sent, and the entity is terminal with that reason.
    ENRICHMENT_DETAIL_URL_REFUSED = "enrichment.detail_url_refused" [Warn]
        [entity_type, github_id, reason]
    /// `sync org` found the organization's run on this identity not finished and continues it
    /// instead of starting a second one.
    SYNC_RUN_ATTACHED = "sync.run_attached" [Info] [run_id, status]
    /// A redirect was not followed because its target failed the URL policy.
    HTTP_REDIRECT_REFUSED = "http.redirect_refused" [Warn] [location, reason]

    /// The feed's core budget formula, resolved from configuration at start.
    CONFIG_BUDGET_RESOLVED = "config.budget_resolved" [Info]
        [poll_interval_seconds, max_pages_per_poll, limit, reserve, poll_allowance,
         enrichment_allowance, actor_guarantee, repository_guarantee]
    /// A core quota window was seen for the first time and its lane allowances set.
    BUDGET_WINDOW_INITIALIZED = "budget.window_initialized" [Info]
        [limit, reserve, poll_allowance, enrichment_allowance, rate_limit_resource,
         rate_limit_limit, rate_limit_remaining, rate_limit_used, rate_limit_reset_at, poll_used]
    /// The core window reset; the lanes start over.
    BUDGET_WINDOW_ROLLED = "budget.window_rolled" [Info] [poll_used, enrichment_used]
    /// GitHub reported a reset instant already past; the ledger keeps its window.
    BUDGET_WINDOW_RESET_IN_PAST = "budget.window_reset_in_past" [Warn] [rate_limit_reset_at]
    /// The limit GitHub reports cannot fund the configured formula; the detail lane is clamped.
    BUDGET_ALLOWANCES_CLAMPED = "budget.allowances_clamped" [Warn] [limit, enrichment_allowance]
    /// Requests headroom did not make were counted against the window (another tenant of the identity).
    BUDGET_CO_TENANT_USAGE = "budget.co_tenant_usage" [Debug]
        [co_tenant_usage, rate_limit_used, application_used]
    /// Another tenant's spending pushed the window into its reserve.
    BUDGET_CO_TENANT_PRESSURE = "budget.co_tenant_pressure" [Info]
        [co_tenant_usage, rate_limit_remaining, reserve]
    /// A lane (polling) spent its allowance for this window.
    BUDGET_CLASS_EXHAUSTED = "budget.class_exhausted" [Info] [class, poll_used]
    /// An entity kind spent its share of the detail lane for this window.
    BUDGET_SHARE_EXHAUSTED = "budget.share_exhausted" [Info] [entity_type]
    /// A rate-limit response blocked every lane of the core window until an instant.
    BUDGET_GLOBAL_BLOCK_SET = "budget.global_block_set" [Info] [global_blocked_until, reason]
    /// The global block lapsed.
    BUDGET_GLOBAL_BLOCK_CLEARED = "budget.global_block_cleared" [Info] []

    /// A feed source is being polled by another process; this one stands aside.
    INGESTION_SOURCE_BUSY = "ingestion.source_busy" [Info] [event_source_id]
    /// A feed poll was asked for before its source is due.
    INGESTION_NOT_DUE = "ingestion.not_due" [Info]
        [event_source_id, forced, deferral_reason, next_poll_at]
    /// An ingestion run of the events feed starts.
    INGESTION_RUN_STARTED = "ingestion.run_started" [Info] [run_id, event_source_id, forced]
    /// An ingestion run stopped on a quota wait and is deferred to an instant.
    INGESTION_DEFERRED = "ingestion.deferred" [Info] [run_id, bucket, reason, until]
    /// The feed answered 304: nothing new, and nothing charged.
    INGESTION_NOT_MODIFIED = "ingestion.not_modified" [Debug]
        [run_id, rate_limit_used, rate_limit_remaining]
    /// One feed page was stored.
    INGESTION_PAGE_PROCESSED = "ingestion.page_processed" [Debug]
        [run_id, page, events_received, events_created]
    /// Paging through the feed stopped, and why.
    INGESTION_PAGINATION_STOPPED = "ingestion.pagination_stopped" [Debug] [run_id, stop_reason]
    /// An ingestion run ended, with its counts.
    INGESTION_RUN_COMPLETED = "ingestion.run_completed" [Info]
        [run_id, event_source_id, run_status, classification, stop_reason, pages_fetched,
         events_received, push_events_seen, events_created, duplicates_skipped,
         events_quarantined, events_ignored, events_failed, next_poll_at]
    /// A feed source failed too often in a row and is suspended.
    INGESTION_SOURCE_FAILED = "ingestion.source_failed" [Error]
        [run_id, event_source_id, deferral_reason, error]
    /// The provider rejected the feed's credential (401): the attempt failed, the source backs
    /// off, and readiness fails until a request succeeds.
    INGESTION_CREDENTIAL_REJECTED = "ingestion.credential_rejected" [Error]
        [run_id, event_source_id, retry_not_before_at, consecutive_failures, error]
    /// A feed source failed and backs off exponentially.
    INGESTION_SOURCE_BACKOFF = "ingestion.source_backoff" [Warn]
        [run_id, event_source_id, retry_not_before_at, backoff_seconds, consecutive_failures,
         error]
    /// An event was stored for the first time.
    INGESTION_EVENT_PERSISTED = "ingestion.event_persisted" [Debug] [run_id, github_event_id]
    /// An event already stored was seen again and skipped.
    INGESTION_EVENT_DUPLICATE = "ingestion.event_duplicate" [Debug] [run_id, github_event_id]
    /// An event of a type headroom does not keep was skipped.
    INGESTION_EVENT_IGNORED = "ingestion.event_ignored" [Debug] [run_id]
    /// A malformed event was quarantined with its reason.
    INGESTION_EVENT_QUARANTINED = "ingestion.event_quarantined" [Info]
        [run_id, github_event_id, event_type, error_code, error_message, payload_fingerprint,
         occurrence_count]
    /// An event could not be stored.
    INGESTION_EVENT_FAILED = "ingestion.event_failed" [Warn] [run_id, github_event_id, error]
    /// A feed poll failed as a whole (the service loop goes on).
    INGESTION_CYCLE_FAILED = "ingestion.cycle_failed" [Error] [error]

    /// An archive import starts.
    IMPORT_STARTED = "import.started" [Info] [run_id, files]
    /// An archive import ended, with its counts.
    IMPORT_COMPLETED = "import.completed" [Info]
        [run_id, lines, events_created, duplicates_skipped, events_quarantined, events_ignored,
         events_failed, duration_s]

    /// The service loop starts an enrichment cycle, and why.
    ENRICHMENT_DISPATCHED = "enrichment.dispatched" [Info, Debug] [reason]
    /// Actors or repositories due for a refresh were claimed for a Search batch.
    ENRICHMENT_REFRESH_CLAIMED = "enrichment.refresh_claimed" [Info]
        [entity_type, backlog_count, refresh_count]
    /// A Search batch answered.
    ENRICHMENT_BATCH_COMPLETED = "enrichment.batch_completed" [Info]
        [status, entity_type, batch_id, requested_count, refresh_count, returned_count,
         valid_count, fallback_count, incomplete_results]
    /// A Search batch waits for its budget.
    ENRICHMENT_BATCH_DEFERRED = "enrichment.batch_deferred" [Info] [entity_type, deferral_reason]
    /// A Search batch failed; its entities are released.
    ENRICHMENT_BATCH_FAILED = "enrichment.batch_failed" [Warn] [entity_type, reason, requested_count]
    /// An entity Search could not resolve was admitted to the detail lane.
    ENRICHMENT_FALLBACK_ADMITTED = "enrichment.fallback_admitted" [Info]
        [entity_type, github_id, reason, enrichment_batch_id]
    /// A detail request filled an entity.
    ENRICHMENT_DETAIL_COMPLETED = "enrichment.detail_completed" [Info] [entity_type, github_id]
    /// The detail lane waits for its budget.
    ENRICHMENT_DETAIL_DEFERRED = "enrichment.detail_deferred" [Info] [entity_type, deferral_reason]
    /// A detail request failed and is retried later.
    ENRICHMENT_DETAIL_RETRY_SCHEDULED = "enrichment.detail_retry_scheduled" [Info]
        [entity_type, github_id, detail_attempts, next_retry_at, reason]
    /// A detail request failed for good; the entity keeps what the events said.
    ENRICHMENT_DETAIL_TERMINAL = "enrichment.detail_terminal" [Warn]
        [entity_type, github_id, detail_attempts, reason, last_error]
    /// An enrichment cycle ended, with its counts.
    ENRICHMENT_CYCLE_COMPLETED = "enrichment.cycle_completed" [Info]
        [requests, search_batches, detail_requests, applied, refreshed, fallbacks_admitted,
         terminal, retries]
    /// An enrichment cycle failed as a whole (the service loop goes on).
    ENRICHMENT_CYCLE_FAILED = "enrichment.cycle_failed" [Error] [error]
    /// Leases on entities held by a dead process were reclaimed.
    ENRICHMENT_STALE_LEASE_RECLAIMED = "enrichment.stale_lease_reclaimed" [Info] [count]
    /// A request of the enricher failed.
    GITHUB_REQUEST = "github.request" [Warn] [request_class, entity_type, github_id, error]
    /// The Search window reset.
    SEARCH_BUDGET_WINDOW_ROLLED = "search_budget.window_rolled" [Info] [used]
    /// The Search window reached its reserve.
    SEARCH_BUDGET_RESERVE_REACHED = "search_budget.reserve_reached" [Info] [used]
    /// The next Search request must wait for the pacing interval.
    SEARCH_BUDGET_PACING_DEFERRED = "search_budget.pacing_deferred" [Debug] [next_request_earliest_at]
    /// Search is blocked until an instant.
    SEARCH_BUDGET_BLOCKED = "search_budget.blocked" [Info] [blocked_until, reason]

    /// A reconciler sweep ended (info when it repaired something).
    RECONCILER_COMPLETED = "reconciler.completed" [Info, Debug]
        [repaired, pending_actors, pending_repositories, claimable_now]
    /// Entities claimed by a dead process were put back in the queue.
    RECONCILER_REQUEUED = "reconciler.requeued" [Warn] [count]
    /// Feed source locks held by a dead process were released.
    RECONCILER_SOURCE_LOCK_RELEASED = "reconciler.source_lock_released" [Info] [count]
    /// Runs of a dead process were marked abandoned.
    RECONCILER_RUN_ABANDONED = "reconciler.run_abandoned" [Warn] [count]
    /// Entity rows missing for stored events were recreated.
    RECONCILER_ENTITIES_RESTORED = "reconciler.entities_restored" [Warn] [actors, repositories]
    /// A reconciler sweep failed (the service loop goes on).
    RECONCILER_FAILED = "reconciler.failed" [Error] [error]

    /// One tick of `headroom run`'s feed loop.
    SERVICE_TICK = "service.tick" [Info, Debug] [run_id, events_created, outcome]
    /// `headroom run` stopped.
    SERVICE_STOPPED = "service.stopped" [Info] [ticks]

    /// A sync run's stage starts or resumes (`detail`: stage, title, position, of).
    SYNC_STAGE_STARTED = "sync.stage_started" [Info] [run_id, detail]
    /// A sync run committed a page (`detail`: stage, scope, scope_index, scope_total, page, rows).
    SYNC_PAGE = "sync.page" [Debug] [run_id, detail]
    /// A sync run's stage finished.
    SYNC_STAGE_DONE = "sync.stage_done" [Info] [run_id, detail]
    /// A stage stopped on a wait or a transient failure (`detail`: bucket, until, reason).
    SYNC_STAGE_DEFERRED = "sync.stage_deferred" [Info] [run_id, detail]
    /// A stage failed; its dependents are blocked.
    SYNC_STAGE_FAILED = "sync.stage_failed" [Info] [run_id, detail]
    /// A stage is blocked by a failed dependency.
    SYNC_STAGE_BLOCKED = "sync.stage_blocked" [Info] [run_id, detail]
    /// Nothing of a run can go for a short while; it waits in process.
    SYNC_PACING = "sync.pacing" [Info] [run_id, detail]
    /// Nothing of a run can go; it is persisted until a worker wakes it.
    SYNC_HIBERNATING = "sync.hibernating" [Info] [run_id, detail]
    /// A sync run ended (`detail`: status).
    SYNC_FINISHED = "sync.finished" [Info] [run_id, detail]
    /// A worker finished with a run, with its summary.
    SYNC_RUN_COMPLETED = "sync.run_completed" [Info, Error] [run_id, status, summary, reason]
    /// A worker put a run to sleep until an instant.
    SYNC_RUN_HIBERNATING = "sync.run_hibernating" [Info] [run_id, until]
    /// A stage (or a run: no `stage`) spent more requests on a route family than estimated,
    /// or spent some on a family with no estimate (`reason`: `underestimated` or
    /// `unbudgeted_actual`). Surfaced only; estimates are never tuned from it.
    SYNC_BUDGET_UNDERESTIMATED = "sync.budget_underestimated" [Warn]
        [run_id, stage, route_family, dimension, estimated_units, actual_requests, reason]
    /// A worker could not take a run (held by another worker, or a store error).
    SYNC_RUN_SKIPPED = "sync.run_skipped" [Warn] [run_id, error]
    /// The quota was spent, so whether the other configured tokens spend the same quota
    /// (one owner) is checked once it reopens, before anything is spent.
    SYNC_OWNERS_UNCHECKED = "sync.owners_unchecked" [Warn] [until]
    /// A run created before credential bindings were recorded was bound to the credential
    /// (fingerprint, never the token) of its owner that resumed it.
    SYNC_RUN_CREDENTIAL_ADOPTED = "sync.run_credential_adopted" [Info]
        [run_id, fingerprint, owner]
    /// `--rebind-credential`: a run went on with another credential of its owner; the rebind
    /// is recorded in the run.
    SYNC_RUN_CREDENTIAL_REBOUND = "sync.run_credential_rebound" [Warn] [run_id, from, to, owner]
    /// A provider operation (`headroom op`) ended, with the credential it spent.
    PROVIDER_OPERATION = "provider.operation" [Info]
        [provider, operation, outcome, fingerprint, owner]
    /// A run claimed by a stopping worker was handed back.
    SYNC_RUN_RELEASED = "sync.run_released" [Info] [run_id]
    /// Handing a run back failed; its claim expires on its own.
    SYNC_RELEASE_FAILED = "sync.release_failed" [Error] [run_id, error]
    /// The sync worker loop failed to pick work (it goes on).
    SYNC_WORKER_FAILED = "sync.worker_failed" [Error] [error]
    /// `headroom run` could not find a Jira OAuth app's site through Atlassian's gateway:
    /// Jira's runs wait, the rest of the service goes on.
    SYNC_JIRA_GATEWAY_MISSING = "sync.jira_gateway_missing" [Warn] [error]

    /// GitHub refused one field of a GraphQL answer (`FORBIDDEN`, SAML…); the rest is kept.
    ORG_FIELD_REFUSED = "org.field_refused" [Info] [stage, path, kind]
    /// GitHub's GraphQL resource limits were exceeded; the stage asks for smaller pages.
    ORG_RESOURCE_LIMITED = "org.resource_limited" [Info] [stage, page_size]
    /// A GraphQL query timed out; the stage asks for smaller pages.
    ORG_QUERY_TIMED_OUT = "org.query_timed_out" [Info] [stage, page_size]
    /// A commit's files could not be read and the commit was skipped.
    ORG_COMMIT_SKIPPED = "org.commit_skipped" [Warn] [repository, sha, status, message]

    /// The HTTP server listens.
    SERVER_LISTENING = "server.listening" [Info] [addr]
    /// The HTTP server stopped.
    SERVER_STOPPED = "server.stopped" [Info] []
    /// The HTTP server failed.
    SERVER_FAILED = "server.failed" [Error] [error]
    /// A read endpoint could not reach the store and answered 503.
    SERVER_STORE_UNAVAILABLE = "server.store_unavailable" [Warn] [error]
    /// A connection past the cap was refused (a JSON 503, or closed when too many wait for
    /// that answer), or an event stream past its own cap: the server holds as many as it
    /// serves.
    SERVER_CONNECTION_REFUSED = "server.connection_refused" [Warn] [limit]
    /// Accepting a connection failed (out of file descriptors, …); the server goes on.
    SERVER_ACCEPT_FAILED = "server.accept_failed" [Warn] [error]
    /// A read of the store behind the exit door failed (a remembered ETag or credential owner);
    /// the request goes on without it.
    STORE_READ_FAILED = "store.read_failed" [Warn] [error]
    /// A write behind the exit door failed (usage, an ETag, a credential owner); the request's
    /// answer is still used.
    STORE_WRITE_FAILED = "store.write_failed" [Warn] [error]
}

/// docs/LOGGING.md's table of events, rendered from the catalog.
pub fn events_table() -> String {
    let mut out = String::from("| Event | Level | Fields | Meaning |\n|---|---|---|---|\n");
    for spec in CATALOG {
        let levels: Vec<&str> = spec.levels.iter().map(|l| l.as_str()).collect();
        let fields: Vec<String> = spec.fields.iter().map(|f| format!("`{f}`")).collect();
        let about: Vec<&str> = spec.about.split_whitespace().collect();
        out.push_str(&format!(
            "| `{}` | {} | {} | {} |\n",
            spec.name,
            levels.join(", "),
            fields.join(", "),
            about.join(" ")
        ));
    }
    out
}

/// The catalog entry of an event name.
pub fn spec(name: &str) -> Option<&'static EventSpec> {
    CATALOG.iter().find(|spec| spec.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_unique_dotted_and_documented() {
        let mut seen = std::collections::BTreeSet::new();
        for spec in CATALOG {
            assert!(seen.insert(spec.name), "{} listed twice", spec.name);
            let (family, event) = spec.name.split_once('.').expect("family.event");
            assert!(!family.is_empty() && !event.is_empty(), "{}", spec.name);
            assert!(
                spec.name
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c == '_' || c == '.'),
                "{}",
                spec.name
            );
            assert!(
                !spec.about.trim().is_empty(),
                "{} has no meaning",
                spec.name
            );
            assert!(
                !spec.fields.contains(&"event"),
                "{} redefines event",
                spec.name
            );
        }
        assert_eq!(
            spec("quota.denied").map(|s| s.constant),
            Some("QUOTA_DENIED")
        );
    }

    #[test]
    fn no_field_names_a_secret() {
        for spec in CATALOG {
            for field in spec.fields {
                for secret in ["token", "password", "authorization", "secret", "cookie"] {
                    assert!(!field.contains(secret), "{}: {field}", spec.name);
                }
            }
        }
    }
}
