-- Every provider's quota owner is a kind of subject: a LaunchDarkly account, a Jira site (its
-- API-token traffic) and an OAuth app (Jira's points) join the user, the installation and the
-- IP. SQLite cannot alter a CHECK: the table is rebuilt, its rows and ids kept.
DROP VIEW credentials_readable;

CREATE TABLE credentials_rebuilt (
    id                  INTEGER PRIMARY KEY,
    host                TEXT    NOT NULL,
    fingerprint         TEXT    NOT NULL,
    subject_kind        TEXT    NOT NULL
        CHECK (subject_kind IN ('user', 'installation', 'ip', 'account', 'site', 'app')),
    owner_login         TEXT    NOT NULL,
    first_seen_at_ms    BIGINT  NOT NULL,
    last_seen_at_ms     BIGINT  NOT NULL,
    UNIQUE (host, fingerprint)
);
INSERT INTO credentials_rebuilt
    (id, host, fingerprint, subject_kind, owner_login, first_seen_at_ms, last_seen_at_ms)
SELECT id, host, fingerprint, subject_kind, owner_login, first_seen_at_ms, last_seen_at_ms
FROM credentials;
DROP TABLE credentials;
ALTER TABLE credentials_rebuilt RENAME TO credentials;
CREATE INDEX credentials_by_owner ON credentials (host, subject_kind, owner_login);

CREATE VIEW credentials_readable AS SELECT
    id,
    host,
    fingerprint,
    subject_kind,
    owner_login,
    first_seen_at_ms,
    last_seen_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', first_seen_at_ms / 1000.0, 'unixepoch') AS first_seen_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', last_seen_at_ms / 1000.0, 'unixepoch') AS last_seen_at
FROM credentials;
