-- What kind of rate-limit event an observation records, and the governor's own reason when
-- it deferred work before sending: the dashboard and the cooldowns tell pacing from refusals.
ALTER TABLE rate_limit_observations ADD COLUMN event_kind TEXT
    CHECK (event_kind IN ('deferred', 'refused', 'hibernated'));
ALTER TABLE rate_limit_observations ADD COLUMN wait_reason TEXT
    CHECK (wait_reason IN ('exhausted', 'secondary_block', 'in_flight_ceiling', 'local_points', 'content_creation'));

-- The readable view lists the table's columns: recreate it with the new ones.
DROP VIEW rate_limit_observations_readable;
CREATE VIEW rate_limit_observations_readable AS SELECT
    id,
    provider,
    host,
    subject,
    credential_fingerprint,
    sync_run_id,
    bucket,
    route_family,
    route_family_attribution,
    dimension,
    reason,
    retry_after_secs,
    reset_at_ms,
    rate_limit,
    remaining,
    used,
    request_id,
    observed_at_ms,
    event_kind,
    wait_reason,
    to_char(to_timestamp(reset_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS reset_at,
    to_char(to_timestamp(observed_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS observed_at
FROM rate_limit_observations;
