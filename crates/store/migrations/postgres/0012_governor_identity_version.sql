-- Each write of an identity's governor state counts up `version`. On PostgreSQL a decision is
-- one statement that writes only if the row is still at the version the process decided on
-- (and takes or frees the lease in the same statement), so a lone process decides in one round
-- trip; a lease taken or freed, or an expired one cleared, always moves the version too, so a
-- process deciding on a cached state learns of it at its next write. On SQLite decisions run
-- under the file's write lock and the column only counts.
ALTER TABLE governor_identities ADD COLUMN version BIGINT NOT NULL DEFAULT 0;

-- The readable view lists its table's columns: recreate it with the new one.
DROP VIEW governor_identities_readable;
CREATE VIEW governor_identities_readable AS SELECT
    host,
    subject_kind,
    subject_id,
    quota_key,
    state,
    version,
    updated_at_ms,
    to_char(to_timestamp(updated_at_ms / 1000.0) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS updated_at
FROM governor_identities;
