-- One request may spend several buckets at once (Linear's requests and complexity,
-- LaunchDarkly's global and route windows, Jira's endpoint burst and app points): it holds one
-- lease per bucket, and the identity counts it once. The first bucket's lease has no
-- `request_lease` and counts for the identity; the others name it here and are freed with it.
ALTER TABLE governor_leases ADD COLUMN request_lease BIGINT;
CREATE INDEX governor_leases_by_request ON governor_leases (request_lease)
    WHERE request_lease IS NOT NULL;

-- The readable view lists its table's columns: recreate it with the new one.
DROP VIEW governor_leases_readable;
CREATE VIEW governor_leases_readable AS SELECT
    id,
    host,
    subject_kind,
    subject_id,
    bucket,
    holder,
    request_lease,
    granted_at_ms,
    expires_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', granted_at_ms / 1000.0, 'unixepoch') AS granted_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', expires_at_ms / 1000.0, 'unixepoch') AS expires_at
FROM governor_leases;
