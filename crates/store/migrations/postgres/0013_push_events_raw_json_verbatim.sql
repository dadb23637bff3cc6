-- push_events keeps each event's JSON as it came (`json`: the text, checked as JSON), no longer
-- converted into `jsonb`. The conversion was about half of the server's work for every event
-- stored (200,000 GH Archive events: 2.0 s into jsonb, 1.0 s into json, the same rows 146 MB
-- against 130 MB), and push_events is the table a backfill fills by the million. The column is
-- read whole or for one field at a time (`->`, `->>` work on both types), never searched by
-- containment, so jsonb's indexable form bought nothing here. It also keeps the event as the
-- provider sent it, key order and all, as SQLite's TEXT always did, and takes the envelopes
-- jsonb refuses but SQLite stores (a `\u0000` escape).
DROP VIEW push_events_readable;
ALTER TABLE push_events ALTER COLUMN raw_json TYPE json USING raw_json::json;
CREATE VIEW push_events_readable AS SELECT
    id,
    github_event_id,
    github_push_id,
    github_actor_id,
    github_repository_id,
    actor_login,
    repository_name,
    ref,
    head_sha,
    before_sha,
    commit_count,
    distinct_commit_count,
    occurred_at_ms,
    ingestion_run_id,
    source,
    created_at_ms,
    raw_json,
    to_char(to_timestamp(occurred_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS occurred_at,
    to_char(to_timestamp(created_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS created_at
FROM push_events;
