-- LaunchDarkly sync: one table per route family, every identity led by `account` (the
-- LaunchDarkly account id, from `GET /api/v2/caller-identity`: keys are unique only within one
-- account). No foreign keys between them: a page of children may land before its parent is
-- refreshed. Instants are epoch milliseconds (`*_at_ms`), as LaunchDarkly sends them; lists
-- (`tags`, `custom_roles`, `target_resources`, `accesses`) are JSON arrays; `raw_json` keeps
-- what LaunchDarkly sent, less an environment's SDK and mobile keys (credentials). Members are
-- named by `_id`, never by e-mail address.

-- A project.
CREATE TABLE ld_projects (
    account                     TEXT  NOT NULL,
    key                         TEXT  NOT NULL,
    id                          TEXT,
    name                        TEXT,
    tags                        TEXT  NOT NULL,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (account, key)
);

-- An environment of a project.
CREATE TABLE ld_environments (
    account                     TEXT  NOT NULL,
    project_key                 TEXT  NOT NULL,
    key                         TEXT  NOT NULL,
    id                          TEXT,
    name                        TEXT,
    color                       TEXT,
    tags                        TEXT  NOT NULL,
    critical                    BOOLEAN,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (account, project_key, key)
);

-- A feature flag of a project.
CREATE TABLE ld_flags (
    account                     TEXT  NOT NULL,
    project_key                 TEXT  NOT NULL,
    key                         TEXT  NOT NULL,
    name                        TEXT,
    description                 TEXT,
    kind                        TEXT,
    temporary                   BOOLEAN,
    tags                        TEXT  NOT NULL,
    version                     BIGINT,
    created_at_ms               BIGINT,
    maintainer_id               TEXT,
    maintainer_team_key         TEXT,
    archived                    BOOLEAN,
    archived_at_ms              BIGINT,
    deprecated                  BOOLEAN,
    deprecated_at_ms            BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (account, project_key, key)
);

-- A flag's configuration in one environment: its state and a summary of its targeting.
CREATE TABLE ld_flag_environments (
    account                     TEXT  NOT NULL,
    project_key                 TEXT  NOT NULL,
    flag_key                    TEXT  NOT NULL,
    environment_key             TEXT  NOT NULL,
    environment_name            TEXT,
    is_on                       BOOLEAN,
    archived                    BOOLEAN,
    version                     BIGINT,
    last_modified_at_ms         BIGINT,
    rules_count                 BIGINT,
    targets_count               BIGINT,
    context_targets_count       BIGINT,
    prerequisites_count         BIGINT,
    fallthrough_variation       BIGINT,
    fallthrough_rollout         BOOLEAN,
    off_variation               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (account, project_key, flag_key, environment_key)
);
CREATE INDEX ld_flag_environments_by_environment ON ld_flag_environments (account, project_key, environment_key);

-- A segment of an environment.
CREATE TABLE ld_segments (
    account                     TEXT  NOT NULL,
    project_key                 TEXT  NOT NULL,
    environment_key             TEXT  NOT NULL,
    key                         TEXT  NOT NULL,
    name                        TEXT,
    description                 TEXT,
    tags                        TEXT  NOT NULL,
    unbounded                   BOOLEAN,
    version                     BIGINT,
    deleted                     BOOLEAN,
    created_at_ms               BIGINT,
    last_modified_at_ms         BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (account, project_key, environment_key, key)
);

-- A member of the account (named by id: the e-mail address stays in raw_json only).
CREATE TABLE ld_members (
    account                     TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    role                        TEXT,
    first_name                  TEXT,
    last_name                   TEXT,
    custom_roles                TEXT  NOT NULL,
    pending_invite              BOOLEAN,
    mfa                         TEXT,
    created_at_ms               BIGINT,
    last_seen_at_ms             BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (account, id)
);

-- An entry of the account's audit log: who did what to which resources, when.
CREATE TABLE ld_audit_entries (
    account                     TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    date_at_ms                  BIGINT  NOT NULL,
    kind                        TEXT,
    name                        TEXT,
    description                 TEXT,
    short_description           TEXT,
    comment                     TEXT,
    member_id                   TEXT,
    target_name                 TEXT,
    target_resources            TEXT  NOT NULL,
    accesses                    TEXT  NOT NULL,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (account, id)
);
CREATE INDEX ld_audit_entries_by_date ON ld_audit_entries (account, date_at_ms);

-- A repository scanned for code references.
CREATE TABLE ld_code_ref_repositories (
    account                     TEXT  NOT NULL,
    name                        TEXT  NOT NULL,
    repo_type                   TEXT,
    default_branch              TEXT,
    source_link                 TEXT,
    enabled                     BOOLEAN,
    version                     BIGINT,
    default_branch_head         TEXT,
    last_synced_at_ms           BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (account, name)
);

CREATE VIEW ld_projects_readable AS SELECT
    account,
    key,
    id,
    name,
    tags,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM ld_projects;

CREATE VIEW ld_environments_readable AS SELECT
    account,
    project_key,
    key,
    id,
    name,
    color,
    tags,
    critical,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM ld_environments;

CREATE VIEW ld_flags_readable AS SELECT
    account,
    project_key,
    key,
    name,
    description,
    kind,
    temporary,
    tags,
    version,
    created_at_ms,
    maintainer_id,
    maintainer_team_key,
    archived,
    archived_at_ms,
    deprecated,
    deprecated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', archived_at_ms / 1000.0, 'unixepoch') AS archived_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', deprecated_at_ms / 1000.0, 'unixepoch') AS deprecated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM ld_flags;

CREATE VIEW ld_flag_environments_readable AS SELECT
    account,
    project_key,
    flag_key,
    environment_key,
    environment_name,
    is_on,
    archived,
    version,
    last_modified_at_ms,
    rules_count,
    targets_count,
    context_targets_count,
    prerequisites_count,
    fallthrough_variation,
    fallthrough_rollout,
    off_variation,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', last_modified_at_ms / 1000.0, 'unixepoch') AS last_modified_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM ld_flag_environments;

CREATE VIEW ld_segments_readable AS SELECT
    account,
    project_key,
    environment_key,
    key,
    name,
    description,
    tags,
    unbounded,
    version,
    deleted,
    created_at_ms,
    last_modified_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', last_modified_at_ms / 1000.0, 'unixepoch') AS last_modified_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM ld_segments;

CREATE VIEW ld_members_readable AS SELECT
    account,
    id,
    role,
    first_name,
    last_name,
    custom_roles,
    pending_invite,
    mfa,
    created_at_ms,
    last_seen_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', last_seen_at_ms / 1000.0, 'unixepoch') AS last_seen_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM ld_members;

CREATE VIEW ld_audit_entries_readable AS SELECT
    account,
    id,
    date_at_ms,
    kind,
    name,
    description,
    short_description,
    comment,
    member_id,
    target_name,
    target_resources,
    accesses,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', date_at_ms / 1000.0, 'unixepoch') AS date_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM ld_audit_entries;

CREATE VIEW ld_code_ref_repositories_readable AS SELECT
    account,
    name,
    repo_type,
    default_branch,
    source_link,
    enabled,
    version,
    default_branch_head,
    last_synced_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', last_synced_at_ms / 1000.0, 'unixepoch') AS last_synced_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM ld_code_ref_repositories;
