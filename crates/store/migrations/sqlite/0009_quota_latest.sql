-- The newest reading of each (identity, bucket) per writing process, kept beside the history
-- so "where does every bucket stand now" — the dashboard's panels, `quota show`, `/metrics` —
-- reads a few rows instead of ranking a week of readings. Written in the same transaction as
-- each reading; pruned with them.
CREATE TABLE quota_latest (
    host            TEXT    NOT NULL,
    subject         TEXT    NOT NULL,
    bucket          TEXT    NOT NULL,
    process_id      TEXT    NOT NULL,
    reading_id      BIGINT  NOT NULL,
    observed_at_ms  BIGINT  NOT NULL,
    PRIMARY KEY (host, subject, bucket, process_id)
);

INSERT INTO quota_latest (host, subject, bucket, process_id, reading_id, observed_at_ms)
SELECT host, subject, bucket, process_id, id, observed_at_ms FROM (
    SELECT host, subject, bucket, process_id, id, observed_at_ms, ROW_NUMBER() OVER
        (PARTITION BY host, subject, bucket, process_id ORDER BY observed_at_ms DESC, id DESC) AS rn
    FROM quota_readings
) newest WHERE rn = 1;

CREATE VIEW quota_latest_readable AS SELECT
    host,
    subject,
    bucket,
    process_id,
    reading_id,
    observed_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', observed_at_ms / 1000.0, 'unixepoch') AS observed_at
FROM quota_latest;
