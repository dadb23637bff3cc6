-- Linear sync: one table per entity, every identity led by `workspace` (the organization's id).
-- No foreign keys between them: a page of children may land before its parent is refreshed.
-- Instants are epoch milliseconds (`*_at_ms`); id lists (`label_ids`) are JSON arrays;
-- `raw_json` keeps what Linear sent.

-- A team.
CREATE TABLE linear_teams (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    key                         TEXT,
    name                        TEXT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    archived_at_ms              BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);

-- A user of the workspace.
CREATE TABLE linear_users (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    name                        TEXT,
    display_name                TEXT,
    email                       TEXT,
    active                      BOOLEAN,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);

-- A user's membership of a team.
CREATE TABLE linear_team_memberships (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    team_id                     TEXT,
    user_id                     TEXT,
    owner                       BOOLEAN,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX linear_team_memberships_by_team ON linear_team_memberships (workspace, team_id);

-- A team's workflow state.
CREATE TABLE linear_workflow_states (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    team_id                     TEXT,
    name                        TEXT,
    state_type                  TEXT,
    position                    DOUBLE PRECISION,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX linear_workflow_states_by_team ON linear_workflow_states (workspace, team_id);

-- An issue label (a team's, or the workspace's when `team_id` is null).
CREATE TABLE linear_labels (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    team_id                     TEXT,
    name                        TEXT,
    color                       TEXT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);

-- A project.
CREATE TABLE linear_projects (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    name                        TEXT,
    state                       TEXT,
    lead_id                     TEXT,
    target_date                 TEXT,
    started_at_ms               BIGINT,
    completed_at_ms             BIGINT,
    canceled_at_ms              BIGINT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);

-- A team's cycle.
CREATE TABLE linear_cycles (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    team_id                     TEXT,
    number                      BIGINT,
    name                        TEXT,
    starts_at_ms                BIGINT,
    ends_at_ms                  BIGINT,
    completed_at_ms             BIGINT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX linear_cycles_by_team ON linear_cycles (workspace, team_id);

-- An issue.
CREATE TABLE linear_issues (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    identifier                  TEXT,
    team_id                     TEXT,
    number                      BIGINT,
    title                       TEXT,
    state_id                    TEXT,
    assignee_id                 TEXT,
    creator_id                  TEXT,
    project_id                  TEXT,
    cycle_id                    TEXT,
    parent_id                   TEXT,
    estimate                    DOUBLE PRECISION,
    priority                    BIGINT,
    label_ids                   TEXT  NOT NULL,
    due_date                    TEXT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    started_at_ms               BIGINT,
    completed_at_ms             BIGINT,
    canceled_at_ms              BIGINT,
    archived_at_ms              BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX linear_issues_updated ON linear_issues (workspace, team_id, updated_at_ms);
CREATE INDEX linear_issues_by_cycle ON linear_issues (workspace, cycle_id);

-- A comment on an issue.
CREATE TABLE linear_comments (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    issue_id                    TEXT,
    user_id                     TEXT,
    body                        TEXT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX linear_comments_by_issue ON linear_comments (workspace, issue_id);

-- An attachment of an issue (a link to a pull request, a document, …).
CREATE TABLE linear_attachments (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    issue_id                    TEXT,
    title                       TEXT,
    url                         TEXT,
    source_type                 TEXT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX linear_attachments_by_issue ON linear_attachments (workspace, issue_id);

-- One entry of an issue's history: the only record of its state, assignee, estimate and cycle changes.
CREATE TABLE linear_issue_history (
    workspace                   TEXT  NOT NULL,
    id                          TEXT  NOT NULL,
    issue_id                    TEXT,
    actor_id                    TEXT,
    from_state_id               TEXT,
    to_state_id                 TEXT,
    from_assignee_id            TEXT,
    to_assignee_id              TEXT,
    from_estimate               DOUBLE PRECISION,
    to_estimate                 DOUBLE PRECISION,
    from_cycle_id               TEXT,
    to_cycle_id                 TEXT,
    from_project_id             TEXT,
    to_project_id               TEXT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, id)
);
CREATE INDEX linear_issue_history_by_issue ON linear_issue_history (workspace, issue_id, created_at_ms);

-- Where an entity's incremental collection stands: objects updated since this instant were asked for.
CREATE TABLE linear_watermarks (
    workspace                   TEXT  NOT NULL,
    family                      TEXT  NOT NULL,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (workspace, family)
);

CREATE VIEW linear_teams_readable AS SELECT
    workspace,
    id,
    key,
    name,
    created_at_ms,
    updated_at_ms,
    archived_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', archived_at_ms / 1000.0, 'unixepoch') AS archived_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_teams;

CREATE VIEW linear_users_readable AS SELECT
    workspace,
    id,
    name,
    display_name,
    email,
    active,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_users;

CREATE VIEW linear_team_memberships_readable AS SELECT
    workspace,
    id,
    team_id,
    user_id,
    owner,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_team_memberships;

CREATE VIEW linear_workflow_states_readable AS SELECT
    workspace,
    id,
    team_id,
    name,
    state_type,
    position,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_workflow_states;

CREATE VIEW linear_labels_readable AS SELECT
    workspace,
    id,
    team_id,
    name,
    color,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_labels;

CREATE VIEW linear_projects_readable AS SELECT
    workspace,
    id,
    name,
    state,
    lead_id,
    target_date,
    started_at_ms,
    completed_at_ms,
    canceled_at_ms,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', started_at_ms / 1000.0, 'unixepoch') AS started_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', completed_at_ms / 1000.0, 'unixepoch') AS completed_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', canceled_at_ms / 1000.0, 'unixepoch') AS canceled_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_projects;

CREATE VIEW linear_cycles_readable AS SELECT
    workspace,
    id,
    team_id,
    number,
    name,
    starts_at_ms,
    ends_at_ms,
    completed_at_ms,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', starts_at_ms / 1000.0, 'unixepoch') AS starts_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', ends_at_ms / 1000.0, 'unixepoch') AS ends_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', completed_at_ms / 1000.0, 'unixepoch') AS completed_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_cycles;

CREATE VIEW linear_issues_readable AS SELECT
    workspace,
    id,
    identifier,
    team_id,
    number,
    title,
    state_id,
    assignee_id,
    creator_id,
    project_id,
    cycle_id,
    parent_id,
    estimate,
    priority,
    label_ids,
    due_date,
    created_at_ms,
    updated_at_ms,
    started_at_ms,
    completed_at_ms,
    canceled_at_ms,
    archived_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', started_at_ms / 1000.0, 'unixepoch') AS started_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', completed_at_ms / 1000.0, 'unixepoch') AS completed_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', canceled_at_ms / 1000.0, 'unixepoch') AS canceled_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', archived_at_ms / 1000.0, 'unixepoch') AS archived_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_issues;

CREATE VIEW linear_comments_readable AS SELECT
    workspace,
    id,
    issue_id,
    user_id,
    body,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_comments;

CREATE VIEW linear_attachments_readable AS SELECT
    workspace,
    id,
    issue_id,
    title,
    url,
    source_type,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_attachments;

CREATE VIEW linear_issue_history_readable AS SELECT
    workspace,
    id,
    issue_id,
    actor_id,
    from_state_id,
    to_state_id,
    from_assignee_id,
    to_assignee_id,
    from_estimate,
    to_estimate,
    from_cycle_id,
    to_cycle_id,
    from_project_id,
    to_project_id,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_issue_history;

CREATE VIEW linear_watermarks_readable AS SELECT
    workspace,
    family,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM linear_watermarks;
