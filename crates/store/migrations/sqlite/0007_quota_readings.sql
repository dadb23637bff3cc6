-- The governor's reading of one quota identity's bucket, as one process saw it: what the
-- provider said is left, what that process has in flight and waiting, and why it waits. Every
-- process that spends quota appends one when the reading changes, so the dashboard and
-- `quota show` see what other processes on the same database spend, and history survives
-- restarts. `process_id` names the writer: in flight is summed over the live ones.
CREATE TABLE quota_readings (
    id                  INTEGER PRIMARY KEY,
    provider            TEXT    NOT NULL,
    host                TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    bucket              TEXT    NOT NULL,
    rate_limit          BIGINT  CHECK (rate_limit >= 0),
    remaining           BIGINT  CHECK (remaining >= 0),
    used                BIGINT  CHECK (used >= 0),
    reset_at_ms         BIGINT,
    in_flight           BIGINT  NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
    waiting             BIGINT  NOT NULL DEFAULT 0 CHECK (waiting >= 0),
    blocked_until_ms    BIGINT,
    last_reason         TEXT,
    process_id          TEXT    NOT NULL,
    observed_at_ms      BIGINT  NOT NULL
);
-- The latest reading per identity and bucket, and one bucket's history since an instant.
CREATE INDEX quota_readings_by_bucket
    ON quota_readings (host, subject, bucket, observed_at_ms);
-- Retention and the live processes' readings.
CREATE INDEX quota_readings_by_time ON quota_readings (observed_at_ms);

CREATE VIEW quota_readings_readable AS SELECT
    id,
    provider,
    host,
    subject,
    bucket,
    rate_limit,
    remaining,
    used,
    reset_at_ms,
    in_flight,
    waiting,
    blocked_until_ms,
    last_reason,
    process_id,
    observed_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', reset_at_ms / 1000.0, 'unixepoch') AS reset_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', observed_at_ms / 1000.0, 'unixepoch') AS observed_at
FROM quota_readings;
