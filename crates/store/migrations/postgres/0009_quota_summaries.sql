-- Two summaries kept beside the history of readings, each written in the same transaction as
-- every reading and pruned with them, so the dashboard's reads cost what they show rather
-- than the length of the history.
--
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
    to_char(to_timestamp(observed_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS observed_at
FROM quota_latest;

-- Each bucket's readings per minute: lowest and highest remaining, largest limit, how many,
-- how many carried a wait. Histories whose slots are a minute or longer (6 h and more) are
-- read from here: a week is 10,080 rows per bucket instead of one per reading.
CREATE TABLE quota_minutes (
    host            TEXT    NOT NULL,
    subject         TEXT    NOT NULL,
    bucket          TEXT    NOT NULL,
    minute_ms       BIGINT  NOT NULL,
    remaining_min   BIGINT,
    remaining_max   BIGINT,
    limit_max       BIGINT,
    readings        BIGINT  NOT NULL,
    waits           BIGINT  NOT NULL,
    PRIMARY KEY (host, subject, bucket, minute_ms)
);

INSERT INTO quota_minutes (host, subject, bucket, minute_ms, remaining_min, remaining_max,
    limit_max, readings, waits)
SELECT host, subject, bucket, observed_at_ms - observed_at_ms % 60000, MIN(remaining),
    MAX(remaining), MAX(rate_limit), COUNT(*),
    SUM(CASE WHEN last_reason IS NULL THEN 0 ELSE 1 END)
FROM quota_readings GROUP BY host, subject, bucket, observed_at_ms - observed_at_ms % 60000;

CREATE VIEW quota_minutes_readable AS SELECT
    host,
    subject,
    bucket,
    minute_ms,
    remaining_min,
    remaining_max,
    limit_max,
    readings,
    waits,
    to_char(to_timestamp(minute_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS minute
FROM quota_minutes;
