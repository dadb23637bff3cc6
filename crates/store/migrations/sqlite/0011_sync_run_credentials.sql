-- Credentials are not capacity: a sync run is bound to the credential it was created with.
-- `credential_fingerprint` (the token's fingerprint, never the token; NULL for an
-- unauthenticated run) and `credential_owner` (the quota identity it resolved to, the same
-- label as `subject`) are stamped at creation; a run created before this migration has both
-- NULL and adopts the first credential that resumes it. A resume with another credential of
-- the same owner needs `--rebind-credential`, recorded here: the fingerprint it replaced, when,
-- and how many times. Feed ingestion runs record the credential they spent the same way.
ALTER TABLE sync_runs ADD COLUMN credential_fingerprint TEXT;
ALTER TABLE sync_runs ADD COLUMN credential_owner TEXT;
ALTER TABLE sync_runs ADD COLUMN rebound_from_fingerprint TEXT;
ALTER TABLE sync_runs ADD COLUMN rebound_at_ms BIGINT;
ALTER TABLE sync_runs ADD COLUMN rebind_count BIGINT NOT NULL DEFAULT 0 CHECK (rebind_count >= 0);
ALTER TABLE ingestion_runs ADD COLUMN credential_fingerprint TEXT;
ALTER TABLE ingestion_runs ADD COLUMN credential_owner TEXT;

-- The readable views list their table's columns: recreate them with the new ones.
DROP VIEW sync_runs_readable;
CREATE VIEW sync_runs_readable AS SELECT
    id,
    kind,
    target,
    host,
    subject,
    status,
    requested_stages,
    not_before_at_ms,
    deferral_count,
    first_deferred_at_ms,
    total_wait_ms,
    failure_reason,
    summary_json,
    claimed_by,
    claim_expires_at_ms,
    created_at_ms,
    started_at_ms,
    finished_at_ms,
    updated_at_ms,
    credential_fingerprint,
    credential_owner,
    rebound_from_fingerprint,
    rebound_at_ms,
    rebind_count,
    strftime('%Y-%m-%dT%H:%M:%fZ', not_before_at_ms / 1000.0, 'unixepoch') AS not_before_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', first_deferred_at_ms / 1000.0, 'unixepoch') AS first_deferred_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', claim_expires_at_ms / 1000.0, 'unixepoch') AS claim_expires_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', started_at_ms / 1000.0, 'unixepoch') AS started_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', finished_at_ms / 1000.0, 'unixepoch') AS finished_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', rebound_at_ms / 1000.0, 'unixepoch') AS rebound_at
FROM sync_runs;

DROP VIEW ingestion_runs_readable;
CREATE VIEW ingestion_runs_readable AS SELECT
    id,
    run_id,
    event_source_id,
    source,
    status,
    classification,
    stop_reason,
    started_at_ms,
    finished_at_ms,
    pages_fetched,
    events_received,
    push_events_seen,
    events_created,
    duplicates_skipped,
    events_quarantined,
    events_ignored,
    events_failed,
    error_message,
    summary_json,
    credential_fingerprint,
    credential_owner,
    strftime('%Y-%m-%dT%H:%M:%fZ', started_at_ms / 1000.0, 'unixepoch') AS started_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', finished_at_ms / 1000.0, 'unixepoch') AS finished_at
FROM ingestion_runs;
