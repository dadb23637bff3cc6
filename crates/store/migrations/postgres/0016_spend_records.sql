-- What headroom spent per quota identity, bucket and provider window, by who sent it: the
-- route family and the sync run (0 for requests no sync run sent). A window is named by the
-- reset its responses carried (`x-ratelimit-reset`), so the rows of one window add up to what
-- headroom spent of that window's `used`; the dashboard calls the rest "outside headroom".
-- `units` are what the provider counts: GraphQL points, 1 per REST request, 0 for an
-- authorized 304. Round trips without a reset (no answer, no headers) are not kept here.
CREATE TABLE spend_records (
    host                TEXT    NOT NULL,
    subject             TEXT    NOT NULL,
    bucket              TEXT    NOT NULL,
    route_family        TEXT    NOT NULL,
    sync_run_id         BIGINT  NOT NULL CHECK (sync_run_id >= 0),
    reset_at_ms         BIGINT  NOT NULL,
    requests            BIGINT  NOT NULL CHECK (requests >= 0),
    units               BIGINT  NOT NULL CHECK (units >= 0),
    first_recorded_at_ms BIGINT NOT NULL,
    last_recorded_at_ms BIGINT  NOT NULL,
    PRIMARY KEY (host, subject, bucket, reset_at_ms, route_family, sync_run_id)
);
-- Retention.
CREATE INDEX spend_records_by_time ON spend_records (last_recorded_at_ms);

CREATE VIEW spend_records_readable AS SELECT
    host,
    subject,
    bucket,
    route_family,
    sync_run_id,
    reset_at_ms,
    requests,
    units,
    first_recorded_at_ms,
    last_recorded_at_ms,
    to_char(to_timestamp(reset_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS reset_at,
    to_char(to_timestamp(first_recorded_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS first_recorded_at,
    to_char(to_timestamp(last_recorded_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS last_recorded_at
FROM spend_records;
