-- headroom's schema, version 1. One logical schema for SQLite and PostgreSQL: the two migration
-- folders differ only in the identity column type and the raw-JSON column type (TEXT in SQLite,
-- JSONB in PostgreSQL).
--
-- Conventions:
--   * every instant is INTEGER epoch milliseconds in a column whose name ends in `_at_ms`;
--     durations end in `_ms` or `_secs` without `_at`;
--   * `raw_json` columns hold what the provider sent, beside the typed columns people query;
--   * GitHub's own identifiers are `github_id` (REST id / GraphQL databaseId) and `node_id`
--     (GraphQL global id); `id` is this database's surrogate key and never leaves it;
--   * tokens are never stored: a credential is (host, fingerprint, owner).

------------------------------------------------------------------------------------------------
-- Identity, quota evidence and conditional requests
------------------------------------------------------------------------------------------------

-- One credential seen by headroom. `fingerprint` is a prefix of the SHA-256 of the token.
CREATE TABLE credentials (
    id                  INTEGER PRIMARY KEY,
    host                TEXT    NOT NULL,
    fingerprint         TEXT    NOT NULL,
    subject_kind        TEXT    NOT NULL CHECK (subject_kind IN ('user', 'installation', 'ip')),
    owner_login         TEXT    NOT NULL,
    first_seen_at_ms    BIGINT  NOT NULL,
    last_seen_at_ms     BIGINT  NOT NULL,
    UNIQUE (host, fingerprint)
);
CREATE INDEX credentials_by_owner ON credentials (host, subject_kind, owner_login);

-- Stored validators for conditional requests, per credential (a response may differ by viewer).
CREATE TABLE etags (
    credential_fingerprint TEXT NOT NULL,
    url                 TEXT    NOT NULL,
    etag                TEXT    NOT NULL,
    last_modified       TEXT,
    stored_at_ms        BIGINT  NOT NULL,
    PRIMARY KEY (credential_fingerprint, url)
);

-- Physical round trips per quota identity, route family and dimension, counted per window.
CREATE TABLE usage_records (
    host                TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    route_family        TEXT    NOT NULL,
    dimension           TEXT    NOT NULL,
    window_start_at_ms  BIGINT  NOT NULL,
    requests            BIGINT  NOT NULL CHECK (requests >= 0),
    units               BIGINT  NOT NULL CHECK (units >= 0),
    last_recorded_at_ms BIGINT  NOT NULL,
    PRIMARY KEY (host, subject, route_family, dimension, window_start_at_ms)
);
CREATE INDEX usage_records_by_window ON usage_records (host, subject, window_start_at_ms);

-- Normalized rate-limit signals (never raw headers or exception text).
CREATE TABLE rate_limit_observations (
    id                  INTEGER PRIMARY KEY,
    provider            TEXT    NOT NULL,
    host                TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    credential_fingerprint TEXT,
    sync_run_id         BIGINT,
    bucket              TEXT,
    route_family        TEXT,
    route_family_attribution TEXT,
    dimension           TEXT,
    reason              TEXT    CHECK (reason IN ('primary', 'secondary', 'permission', 'complexity', 'unknown')),
    retry_after_secs    BIGINT  CHECK (retry_after_secs >= 0),
    reset_at_ms         BIGINT,
    rate_limit          BIGINT,
    remaining           BIGINT,
    used                BIGINT,
    request_id          TEXT,
    observed_at_ms      BIGINT  NOT NULL
);
CREATE INDEX rate_limit_observations_recent ON rate_limit_observations (host, observed_at_ms);
CREATE INDEX rate_limit_observations_cooldown
    ON rate_limit_observations (provider, host, route_family, observed_at_ms);

------------------------------------------------------------------------------------------------
-- The governor's shared state (used by the PostgreSQL state backend; a SQLite deployment keeps
-- governor state in memory, so these stay empty there)
------------------------------------------------------------------------------------------------

-- One quota identity: the serialized rule state, updated only under this row's lock.
CREATE TABLE governor_identities (
    host                TEXT    NOT NULL,
    subject_kind        TEXT    NOT NULL,
    subject_id          TEXT    NOT NULL,
    quota_key           TEXT    NOT NULL,
    state               TEXT    NOT NULL,
    updated_at_ms       BIGINT  NOT NULL,
    PRIMARY KEY (host, subject_kind, subject_id)
);

-- One granted, unfinished request: an in-flight slot that expires, so a killed process cannot
-- keep capacity.
CREATE TABLE governor_leases (
    id                  INTEGER PRIMARY KEY,
    host                TEXT    NOT NULL,
    subject_kind        TEXT    NOT NULL,
    subject_id          TEXT    NOT NULL,
    bucket              TEXT    NOT NULL,
    holder              TEXT    NOT NULL,
    granted_at_ms       BIGINT  NOT NULL,
    expires_at_ms       BIGINT  NOT NULL,
    FOREIGN KEY (host, subject_kind, subject_id)
        REFERENCES governor_identities (host, subject_kind, subject_id) ON DELETE CASCADE
);
CREATE INDEX governor_leases_by_identity
    ON governor_leases (host, subject_kind, subject_id, expires_at_ms);

------------------------------------------------------------------------------------------------
-- Feed ingestion
------------------------------------------------------------------------------------------------

-- One pollable feed and its schedule: five independent components, never one timestamp.
CREATE TABLE event_sources (
    id                  INTEGER PRIMARY KEY,
    source_type         TEXT    NOT NULL UNIQUE,
    url                 TEXT    NOT NULL,
    enabled             BOOLEAN NOT NULL DEFAULT TRUE,
    status              TEXT    NOT NULL DEFAULT 'idle' CHECK (status IN ('idle', 'failed')),
    etag                TEXT,
    cadence_due_at_ms   BIGINT,
    poll_floor_until_at_ms BIGINT,
    retry_not_before_at_ms BIGINT,
    next_poll_at_ms     BIGINT,
    consecutive_failures BIGINT NOT NULL DEFAULT 0 CHECK (consecutive_failures >= 0),
    last_error          TEXT,
    last_polled_at_ms   BIGINT,
    lock_token          TEXT,
    lock_expires_at_ms  BIGINT,
    created_at_ms       BIGINT  NOT NULL,
    updated_at_ms       BIGINT  NOT NULL
);
CREATE INDEX event_sources_due ON event_sources (source_type, next_poll_at_ms);

-- One poll attempt that reached the provider (a poll turned away writes nothing).
CREATE TABLE ingestion_runs (
    id                  INTEGER PRIMARY KEY,
    run_id              TEXT    NOT NULL UNIQUE,
    event_source_id     BIGINT  REFERENCES event_sources (id),
    source              TEXT    NOT NULL DEFAULT 'feed' CHECK (source IN ('feed', 'gharchive')),
    status              TEXT    NOT NULL CHECK (status IN ('running', 'completed', 'failed', 'deferred')),
    classification      TEXT,
    stop_reason         TEXT,
    started_at_ms       BIGINT  NOT NULL,
    finished_at_ms      BIGINT,
    pages_fetched       BIGINT  NOT NULL DEFAULT 0,
    events_received     BIGINT  NOT NULL DEFAULT 0,
    push_events_seen    BIGINT  NOT NULL DEFAULT 0,
    events_created      BIGINT  NOT NULL DEFAULT 0,
    duplicates_skipped  BIGINT  NOT NULL DEFAULT 0,
    events_quarantined  BIGINT  NOT NULL DEFAULT 0,
    events_ignored      BIGINT  NOT NULL DEFAULT 0,
    events_failed       BIGINT  NOT NULL DEFAULT 0,
    error_message       TEXT,
    summary_json        TEXT  
);
CREATE INDEX ingestion_runs_recent ON ingestion_runs (started_at_ms);

-- One GitHub user seen pushing, or a member of a synced organization: the latest projection,
-- and the staged enrichment machine of the feed.
CREATE TABLE actors (
    id                  INTEGER PRIMARY KEY,
    github_id           BIGINT  NOT NULL UNIQUE,
    node_id             TEXT    UNIQUE,
    login               TEXT    NOT NULL,
    display_login       TEXT,
    detail_url          TEXT,
    avatar_url          TEXT,
    account_type        TEXT,
    name                TEXT,
    enrichment_status   TEXT    NOT NULL DEFAULT 'pending'
        CHECK (enrichment_status IN ('pending', 'complete', 'retryable_failure', 'permanent_failure')),
    enrichment_stage    TEXT    NOT NULL DEFAULT 'batch_pending'
        CHECK (enrichment_stage IN ('batch_pending', 'batch_in_flight', 'retry_scheduled',
            'detail_pending', 'detail_in_flight', 'contract_complete', 'terminal')),
    batch_attempts      BIGINT  NOT NULL DEFAULT 0 CHECK (batch_attempts >= 0),
    detail_attempts     BIGINT  NOT NULL DEFAULT 0 CHECK (detail_attempts >= 0),
    next_retry_at_ms    BIGINT,
    lease_token         TEXT,
    lease_batch_id      BIGINT,
    lease_expires_at_ms BIGINT,
    first_seen_at_ms    BIGINT,
    last_seen_at_ms     BIGINT,
    latest_event_at_ms  BIGINT,
    event_native_at_ms  BIGINT,
    derived_at_ms       BIGINT,
    batch_pending_at_ms BIGINT,
    batch_applied_at_ms BIGINT,
    detail_pending_at_ms BIGINT,
    retry_scheduled_at_ms BIGINT,
    contract_complete_at_ms BIGINT,
    terminal_at_ms      BIGINT,
    terminal_reason     TEXT,
    last_error          TEXT,
    fetched_at_ms       BIGINT,
    latest_observation_id BIGINT,
    latest_observation_source TEXT,
    latest_observed_at_ms BIGINT,
    raw_json            TEXT  ,
    created_at_ms       BIGINT  NOT NULL,
    updated_at_ms       BIGINT  NOT NULL
);
CREATE INDEX actors_stage_fifo ON actors (enrichment_stage, created_at_ms, id);
CREATE INDEX actors_candidates ON actors (enrichment_status, created_at_ms, id);
CREATE INDEX actors_refresh ON actors (fetched_at_ms, next_retry_at_ms);
CREATE INDEX actors_lease ON actors (lease_expires_at_ms);
CREATE INDEX actors_login ON actors (login);

-- Organizations collected by org sync.
CREATE TABLE organizations (
    id                  INTEGER PRIMARY KEY,
    github_id           BIGINT  UNIQUE,
    node_id             TEXT    UNIQUE,
    login               TEXT    NOT NULL UNIQUE,
    name                TEXT,
    description         TEXT,
    url                 TEXT,
    github_created_at_ms BIGINT,
    github_updated_at_ms BIGINT,
    members_collected_at_ms BIGINT,
    teams_collected_at_ms BIGINT,
    repositories_collected_at_ms BIGINT,
    projects_collected_at_ms BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL
);

-- One repository, whether seen in the feed (enrichment state) or collected with its
-- organization (per-repository watermarks: `*_collected_at_ms` is the incremental cut between
-- syncs; checkpoints are the cut within one).
CREATE TABLE repositories (
    id                  INTEGER PRIMARY KEY,
    github_id           BIGINT  NOT NULL UNIQUE,
    node_id             TEXT    UNIQUE,
    full_name           TEXT    NOT NULL,
    name                TEXT,
    owner_login         TEXT,
    owner_github_id     BIGINT,
    organization_id     BIGINT  REFERENCES organizations (id),
    detail_url          TEXT,
    description         TEXT,
    visibility          TEXT,
    fork                BOOLEAN,
    archived            BOOLEAN,
    default_branch      TEXT,
    github_created_at_ms BIGINT,
    github_updated_at_ms BIGINT,
    pushed_at_ms        BIGINT,
    enrichment_status   TEXT    NOT NULL DEFAULT 'pending'
        CHECK (enrichment_status IN ('pending', 'complete', 'retryable_failure', 'permanent_failure')),
    enrichment_stage    TEXT    NOT NULL DEFAULT 'batch_pending'
        CHECK (enrichment_stage IN ('batch_pending', 'batch_in_flight', 'retry_scheduled',
            'detail_pending', 'detail_in_flight', 'contract_complete', 'terminal')),
    batch_attempts      BIGINT  NOT NULL DEFAULT 0 CHECK (batch_attempts >= 0),
    detail_attempts     BIGINT  NOT NULL DEFAULT 0 CHECK (detail_attempts >= 0),
    next_retry_at_ms    BIGINT,
    lease_token         TEXT,
    lease_batch_id      BIGINT,
    lease_expires_at_ms BIGINT,
    first_seen_at_ms    BIGINT,
    last_seen_at_ms     BIGINT,
    latest_event_at_ms  BIGINT,
    event_native_at_ms  BIGINT,
    derived_at_ms       BIGINT,
    batch_pending_at_ms BIGINT,
    batch_applied_at_ms BIGINT,
    detail_pending_at_ms BIGINT,
    retry_scheduled_at_ms BIGINT,
    contract_complete_at_ms BIGINT,
    terminal_at_ms      BIGINT,
    terminal_reason     TEXT,
    last_error          TEXT,
    fetched_at_ms       BIGINT,
    latest_observation_id BIGINT,
    latest_observation_source TEXT,
    latest_observed_at_ms BIGINT,
    issues_collected_at_ms BIGINT,
    issue_comments_collected_at_ms BIGINT,
    pull_requests_collected_at_ms BIGINT,
    workflow_runs_collected_at_ms BIGINT,
    check_runs_collected_at_ms BIGINT,
    branches_collected_at_ms BIGINT,
    raw_json            TEXT  ,
    created_at_ms       BIGINT  NOT NULL,
    updated_at_ms       BIGINT  NOT NULL
);
CREATE INDEX repositories_stage_fifo ON repositories (enrichment_stage, created_at_ms, id);
CREATE INDEX repositories_candidates ON repositories (enrichment_status, created_at_ms, id);
CREATE INDEX repositories_refresh ON repositories (fetched_at_ms, next_retry_at_ms);
CREATE INDEX repositories_lease ON repositories (lease_expires_at_ms);
CREATE INDEX repositories_full_name ON repositories (full_name);
CREATE INDEX repositories_by_organization ON repositories (organization_id);

-- One accepted PushEvent: the durability boundary. The unique GitHub event id deduplicates.
CREATE TABLE push_events (
    id                  INTEGER PRIMARY KEY,
    github_event_id     TEXT    NOT NULL UNIQUE,
    github_push_id      BIGINT,
    github_actor_id     BIGINT  NOT NULL REFERENCES actors (github_id),
    github_repository_id BIGINT NOT NULL REFERENCES repositories (github_id),
    actor_login         TEXT    NOT NULL,
    repository_name     TEXT    NOT NULL,
    ref                 TEXT    NOT NULL,
    head_sha            TEXT    NOT NULL,
    before_sha          TEXT    NOT NULL,
    commit_count        BIGINT,
    distinct_commit_count BIGINT,
    occurred_at_ms      BIGINT  NOT NULL,
    ingestion_run_id    BIGINT  REFERENCES ingestion_runs (id),
    source              TEXT    NOT NULL DEFAULT 'feed' CHECK (source IN ('feed', 'gharchive')),
    created_at_ms       BIGINT  NOT NULL,
    raw_json            TEXT    NOT NULL
);
CREATE INDEX push_events_keyset ON push_events (occurred_at_ms, id);
CREATE INDEX push_events_by_actor ON push_events (github_actor_id, occurred_at_ms, id);
CREATE INDEX push_events_by_repository ON push_events (github_repository_id, occurred_at_ms, id);
CREATE INDEX push_events_by_push_id ON push_events (github_push_id);
CREATE INDEX push_events_created ON push_events (created_at_ms);

-- One distinct malformed envelope, keyed by the SHA-256 of its canonical JSON. The first
-- classification is permanent; the occurrence count climbs on replay.
CREATE TABLE quarantined_events (
    id                  INTEGER PRIMARY KEY,
    payload_fingerprint TEXT    NOT NULL UNIQUE,
    github_event_id     TEXT,
    event_type          TEXT,
    error_code          TEXT    NOT NULL,
    error_message       TEXT    NOT NULL,
    occurrence_count    BIGINT  NOT NULL DEFAULT 1 CHECK (occurrence_count >= 1),
    source              TEXT    NOT NULL DEFAULT 'feed' CHECK (source IN ('feed', 'gharchive')),
    first_received_at_ms BIGINT NOT NULL,
    last_received_at_ms BIGINT  NOT NULL,
    raw_json            TEXT  ,
    raw_text            TEXT
);
CREATE INDEX quarantined_events_by_event_id ON quarantined_events (github_event_id);

-- One enrichment request attempt (a search batch or a detail fallback).
CREATE TABLE enrichment_batches (
    id                  INTEGER PRIMARY KEY,
    correlation_id      TEXT    NOT NULL UNIQUE,
    request_kind        TEXT    NOT NULL CHECK (request_kind IN ('search', 'detail')),
    entity_kind         TEXT    NOT NULL CHECK (entity_kind IN ('actor', 'repository')),
    status              TEXT    NOT NULL
        CHECK (status IN ('in_flight', 'succeeded', 'failed', 'deferred', 'stale_lease')),
    is_refresh          BOOLEAN NOT NULL DEFAULT FALSE,
    requested_count     BIGINT  NOT NULL DEFAULT 0,
    returned_count      BIGINT,
    valid_count         BIGINT,
    missing_count       BIGINT,
    invalid_count       BIGINT,
    incomplete_results  BOOLEAN,
    http_status         BIGINT,
    request_url         TEXT,
    rate_limit_resource TEXT,
    rate_limit_limit    BIGINT,
    rate_limit_remaining BIGINT,
    rate_limit_reset_at_ms BIGINT,
    error_code          TEXT,
    error_message       TEXT,
    lease_expires_at_ms BIGINT,
    started_at_ms       BIGINT  NOT NULL,
    finished_at_ms      BIGINT,
    raw_json            TEXT  
);
CREATE INDEX enrichment_batches_recent ON enrichment_batches (started_at_ms);
CREATE INDEX enrichment_batches_groups ON enrichment_batches (request_kind, entity_kind, status);

-- One raw observed item, append-only: a re-observation is a new row.
CREATE TABLE enrichment_observations (
    id                  INTEGER PRIMARY KEY,
    entity_kind         TEXT    NOT NULL CHECK (entity_kind IN ('actor', 'repository')),
    entity_github_id    BIGINT  NOT NULL,
    source              TEXT    NOT NULL CHECK (source IN ('event', 'search', 'detail')),
    validation_outcome  TEXT    NOT NULL,
    enrichment_batch_id BIGINT  REFERENCES enrichment_batches (id),
    payload_fingerprint TEXT,
    observed_at_ms      BIGINT  NOT NULL,
    raw_json            TEXT    NOT NULL
);
CREATE INDEX enrichment_observations_by_entity
    ON enrichment_observations (entity_kind, entity_github_id, observed_at_ms);
CREATE INDEX enrichment_observations_recent ON enrichment_observations (observed_at_ms);

-- The hourly core ledger, one row per quota identity (the unauthenticated quota is keyed by
-- the outbound IP, so it is one row in practice).
CREATE TABLE core_budget_ledger (
    host                TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    window_status       TEXT    NOT NULL DEFAULT 'uninitialized'
        CHECK (window_status IN ('uninitialized', 'active', 'globally_blocked')),
    window_limit        BIGINT  CHECK (window_limit >= 0),
    remaining           BIGINT  CHECK (remaining >= 0),
    reserve             BIGINT  NOT NULL DEFAULT 0 CHECK (reserve >= 0),
    poll_used           BIGINT  NOT NULL DEFAULT 0 CHECK (poll_used >= 0),
    poll_allowance      BIGINT  NOT NULL DEFAULT 0 CHECK (poll_allowance >= 0),
    enrichment_used     BIGINT  NOT NULL DEFAULT 0 CHECK (enrichment_used >= 0),
    enrichment_allowance BIGINT NOT NULL DEFAULT 0 CHECK (enrichment_allowance >= 0),
    actor_share_used    BIGINT  NOT NULL DEFAULT 0 CHECK (actor_share_used >= 0),
    repository_share_used BIGINT NOT NULL DEFAULT 0 CHECK (repository_share_used >= 0),
    co_tenant_usage     BIGINT  NOT NULL DEFAULT 0 CHECK (co_tenant_usage >= 0),
    global_blocked_until_at_ms BIGINT,
    consecutive_secondary_limits BIGINT NOT NULL DEFAULT 0 CHECK (consecutive_secondary_limits >= 0),
    window_started_at_ms BIGINT,
    reset_at_ms         BIGINT,
    updated_at_ms       BIGINT  NOT NULL,
    PRIMARY KEY (host, subject)
);

-- The per-minute search ledger.
CREATE TABLE search_budget_ledger (
    host                TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    window_limit        BIGINT  CHECK (window_limit >= 0),
    remaining           BIGINT  CHECK (remaining >= 0),
    request_ceiling     BIGINT  NOT NULL DEFAULT 10 CHECK (request_ceiling >= 0),
    reserve             BIGINT  NOT NULL DEFAULT 2 CHECK (reserve >= 0),
    used                BIGINT  NOT NULL DEFAULT 0 CHECK (used >= 0),
    actor_used          BIGINT  NOT NULL DEFAULT 0 CHECK (actor_used >= 0),
    repository_used     BIGINT  NOT NULL DEFAULT 0 CHECK (repository_used >= 0),
    blocked_until_at_ms BIGINT,
    last_request_at_ms  BIGINT,
    reset_at_ms         BIGINT,
    updated_at_ms       BIGINT  NOT NULL,
    PRIMARY KEY (host, subject)
);

------------------------------------------------------------------------------------------------
-- Organization sync: runs, checkpoints and the collected entities
------------------------------------------------------------------------------------------------

-- One sync run. A hibernating run waits for `not_before_at_ms`; a worker claims it by lease.
CREATE TABLE sync_runs (
    id                  INTEGER PRIMARY KEY,
    kind                TEXT    NOT NULL,
    target              TEXT    NOT NULL,
    host                TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    status              TEXT    NOT NULL
        CHECK (status IN ('pending', 'running', 'hibernating', 'done', 'failed')),
    requested_stages    TEXT  ,
    not_before_at_ms    BIGINT,
    deferral_count      BIGINT  NOT NULL DEFAULT 0 CHECK (deferral_count >= 0),
    first_deferred_at_ms BIGINT,
    total_wait_ms       BIGINT  NOT NULL DEFAULT 0 CHECK (total_wait_ms >= 0),
    failure_reason      TEXT,
    summary_json        TEXT  ,
    claimed_by          TEXT,
    claim_expires_at_ms BIGINT,
    created_at_ms       BIGINT  NOT NULL,
    started_at_ms       BIGINT,
    finished_at_ms      BIGINT,
    updated_at_ms       BIGINT  NOT NULL
);
CREATE INDEX sync_runs_wakeup ON sync_runs (status, not_before_at_ms);

-- Where a run stands, per (stage, scope). `scope` is '' for a once-per-run stage, or the
-- repository (full name) for a per-repository stage. `page_cursor` is the cursor of the next
-- page; it commits in the same transaction as the rows of the page before it.
CREATE TABLE sync_checkpoints (
    sync_run_id         BIGINT  NOT NULL REFERENCES sync_runs (id) ON DELETE CASCADE,
    stage               TEXT    NOT NULL,
    scope               TEXT    NOT NULL DEFAULT '',
    status              TEXT    NOT NULL
        CHECK (status IN ('pending', 'running', 'done', 'blocked', 'deferred')),
    page_cursor         TEXT,
    pages_done          BIGINT  NOT NULL DEFAULT 0 CHECK (pages_done >= 0),
    rows_written        BIGINT  NOT NULL DEFAULT 0 CHECK (rows_written >= 0),
    detail              TEXT,
    updated_at_ms       BIGINT  NOT NULL,
    PRIMARY KEY (sync_run_id, stage, scope)
);

CREATE TABLE organization_members (
    organization_id     BIGINT  NOT NULL REFERENCES organizations (id),
    github_id           BIGINT  NOT NULL,
    node_id             TEXT,
    login               TEXT    NOT NULL,
    role                TEXT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (organization_id, github_id)
);

CREATE TABLE teams (
    id                  INTEGER PRIMARY KEY,
    organization_id     BIGINT  NOT NULL REFERENCES organizations (id),
    node_id             TEXT    NOT NULL UNIQUE,
    github_id           BIGINT,
    slug                TEXT    NOT NULL,
    name                TEXT    NOT NULL,
    description         TEXT,
    privacy             TEXT,
    parent_node_id      TEXT,
    members_count       BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    UNIQUE (organization_id, slug)
);

CREATE TABLE issues (
    id                  INTEGER PRIMARY KEY,
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    node_id             TEXT    NOT NULL UNIQUE,
    github_id           BIGINT,
    number              BIGINT  NOT NULL,
    title               TEXT    NOT NULL,
    state               TEXT    NOT NULL,
    author_login        TEXT,
    comments_count      BIGINT,
    github_created_at_ms BIGINT,
    github_updated_at_ms BIGINT,
    closed_at_ms        BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    UNIQUE (repository_github_id, number)
);
CREATE INDEX issues_updated ON issues (repository_github_id, github_updated_at_ms);

CREATE TABLE issue_comments (
    id                  INTEGER PRIMARY KEY,
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    issue_number        BIGINT  NOT NULL,
    node_id             TEXT    NOT NULL UNIQUE,
    github_id           BIGINT,
    author_login        TEXT,
    github_created_at_ms BIGINT,
    github_updated_at_ms BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL
);
CREATE INDEX issue_comments_by_issue ON issue_comments (repository_github_id, issue_number);

CREATE TABLE projects (
    id                  INTEGER PRIMARY KEY,
    organization_id     BIGINT  NOT NULL REFERENCES organizations (id),
    node_id             TEXT    NOT NULL UNIQUE,
    number              BIGINT  NOT NULL,
    title               TEXT    NOT NULL,
    closed              BOOLEAN NOT NULL DEFAULT FALSE,
    url                 TEXT,
    items_count         BIGINT,
    github_created_at_ms BIGINT,
    github_updated_at_ms BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    UNIQUE (organization_id, number)
);

CREATE TABLE pull_requests (
    id                  INTEGER PRIMARY KEY,
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    node_id             TEXT    NOT NULL UNIQUE,
    github_id           BIGINT,
    number              BIGINT  NOT NULL,
    title               TEXT    NOT NULL,
    state               TEXT    NOT NULL,
    author_login        TEXT,
    head_ref            TEXT,
    base_ref            TEXT,
    head_sha            TEXT,
    merged              BOOLEAN NOT NULL DEFAULT FALSE,
    merged_at_ms        BIGINT,
    github_created_at_ms BIGINT,
    github_updated_at_ms BIGINT,
    closed_at_ms        BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    UNIQUE (repository_github_id, number)
);
CREATE INDEX pull_requests_updated ON pull_requests (repository_github_id, github_updated_at_ms);

CREATE TABLE pull_request_commits (
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    pull_request_number BIGINT  NOT NULL,
    commit_sha          TEXT    NOT NULL,
    author_login        TEXT,
    message_headline    TEXT,
    committed_at_ms     BIGINT,
    additions           BIGINT,
    deletions           BIGINT,
    changed_files       BIGINT,
    files_collected_at_ms BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (repository_github_id, pull_request_number, commit_sha)
);
CREATE INDEX pull_request_commits_files_pending
    ON pull_request_commits (repository_github_id, files_collected_at_ms);

CREATE TABLE commit_files (
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    commit_sha          TEXT    NOT NULL,
    path                TEXT    NOT NULL,
    previous_path       TEXT,
    status              TEXT,
    additions           BIGINT,
    deletions           BIGINT,
    changes             BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (repository_github_id, commit_sha, path)
);

CREATE TABLE workflow_runs (
    github_id           BIGINT  PRIMARY KEY,
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    node_id             TEXT,
    workflow_id         BIGINT,
    name                TEXT,
    event               TEXT,
    head_branch         TEXT,
    head_sha            TEXT,
    status              TEXT,
    conclusion          TEXT,
    run_number          BIGINT,
    run_attempt         BIGINT,
    github_created_at_ms BIGINT,
    github_updated_at_ms BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL
);
CREATE INDEX workflow_runs_by_repository ON workflow_runs (repository_github_id, github_created_at_ms);

CREATE TABLE workflow_jobs (
    github_id           BIGINT  PRIMARY KEY,
    workflow_run_github_id BIGINT NOT NULL,
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    node_id             TEXT,
    name                TEXT,
    status              TEXT,
    conclusion          TEXT,
    started_at_ms       BIGINT,
    completed_at_ms     BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL
);
CREATE INDEX workflow_jobs_by_run ON workflow_jobs (workflow_run_github_id);

CREATE TABLE check_runs (
    github_id           BIGINT  PRIMARY KEY,
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    node_id             TEXT,
    check_suite_id      BIGINT,
    head_sha            TEXT,
    name                TEXT,
    status              TEXT,
    conclusion          TEXT,
    started_at_ms       BIGINT,
    completed_at_ms     BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL
);
CREATE INDEX check_runs_by_sha ON check_runs (repository_github_id, head_sha);

CREATE TABLE branches (
    repository_github_id BIGINT NOT NULL REFERENCES repositories (github_id),
    name                TEXT    NOT NULL,
    head_sha            TEXT,
    protected           BOOLEAN,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (repository_github_id, name)
);
