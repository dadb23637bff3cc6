-- PushEvents recorded before GitHub added `payload.before` (2012 and earlier) have none:
-- they are valid events, stored with before_sha NULL instead of quarantined. SQLite cannot
-- drop a NOT NULL constraint in place, so the table is rebuilt with its rows and indexes.
CREATE TABLE push_events_rebuilt (
    id                  INTEGER PRIMARY KEY,
    github_event_id     TEXT    NOT NULL UNIQUE,
    github_push_id      BIGINT,
    github_actor_id     BIGINT  NOT NULL REFERENCES actors (github_id),
    github_repository_id BIGINT NOT NULL REFERENCES repositories (github_id),
    actor_login         TEXT    NOT NULL,
    repository_name     TEXT    NOT NULL,
    ref                 TEXT    NOT NULL,
    head_sha            TEXT    NOT NULL,
    before_sha          TEXT,
    commit_count        BIGINT,
    distinct_commit_count BIGINT,
    occurred_at_ms      BIGINT  NOT NULL,
    ingestion_run_id    BIGINT  REFERENCES ingestion_runs (id),
    source              TEXT    NOT NULL DEFAULT 'feed' CHECK (source IN ('feed', 'gharchive')),
    created_at_ms       BIGINT  NOT NULL,
    raw_json            TEXT    NOT NULL
);
INSERT INTO push_events_rebuilt
    (id, github_event_id, github_push_id, github_actor_id, github_repository_id, actor_login,
     repository_name, ref, head_sha, before_sha, commit_count, distinct_commit_count,
     occurred_at_ms, ingestion_run_id, source, created_at_ms, raw_json)
SELECT id, github_event_id, github_push_id, github_actor_id, github_repository_id, actor_login,
       repository_name, ref, head_sha, before_sha, commit_count, distinct_commit_count,
       occurred_at_ms, ingestion_run_id, source, created_at_ms, raw_json
FROM push_events;
DROP TABLE push_events;
ALTER TABLE push_events_rebuilt RENAME TO push_events;
CREATE INDEX push_events_keyset ON push_events (occurred_at_ms, id);
CREATE INDEX push_events_by_actor ON push_events (github_actor_id, occurred_at_ms, id);
CREATE INDEX push_events_by_repository ON push_events (github_repository_id, occurred_at_ms, id);
CREATE INDEX push_events_by_push_id ON push_events (github_push_id);
CREATE INDEX push_events_created ON push_events (created_at_ms);
