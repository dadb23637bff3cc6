-- Jira sync: one table per route family, every identity led by `site` (the site's host: Jira's
-- ids are unique only within one site). No foreign keys between them: a page of children may
-- land before its parent is refreshed. Instants are epoch milliseconds (`*_at_ms`); lists of
-- names (`labels`) are JSON arrays; ADF bodies and changelog items are JSON; `raw_json` keeps
-- what Jira sent. People are named by `accountId`, never by e-mail address.

-- A project.
CREATE TABLE jira_projects (
    site                        TEXT  NOT NULL,
    id                          BIGINT  NOT NULL,
    key                         TEXT  NOT NULL,
    name                        TEXT,
    project_type                TEXT,
    lead_account_id             TEXT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE INDEX jira_projects_by_key ON jira_projects (site, key);

-- An issue (any type: story, bug, epic, sub-task).
CREATE TABLE jira_issues (
    site                        TEXT  NOT NULL,
    id                          BIGINT  NOT NULL,
    key                         TEXT  NOT NULL,
    project_id                  BIGINT,
    summary                     TEXT,
    issue_type                  TEXT,
    status                      TEXT,
    status_category             TEXT,
    priority                    TEXT,
    assignee_account_id         TEXT,
    reporter_account_id         TEXT,
    parent_id                   BIGINT,
    labels                      TEXT  NOT NULL,
    story_points                DOUBLE PRECISION,
    original_estimate_seconds   BIGINT,
    time_spent_seconds          BIGINT,
    due_date                    TEXT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    resolved_at_ms              BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE INDEX jira_issues_by_key ON jira_issues (site, key);
CREATE INDEX jira_issues_updated ON jira_issues (site, project_id, updated_at_ms);

-- An issue's membership of a sprint (Jira Software's sprint field).
CREATE TABLE jira_issue_sprints (
    site                        TEXT  NOT NULL,
    issue_id                    BIGINT  NOT NULL,
    sprint_id                   BIGINT  NOT NULL,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, issue_id, sprint_id)
);
CREATE INDEX jira_issue_sprints_by_sprint ON jira_issue_sprints (site, sprint_id);

-- One entry of an issue's changelog: who changed which fields, when.
CREATE TABLE jira_changelog (
    site                        TEXT  NOT NULL,
    id                          BIGINT  NOT NULL,
    issue_id                    BIGINT  NOT NULL,
    author_account_id           TEXT,
    created_at_ms               BIGINT,
    items                       TEXT  NOT NULL,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE INDEX jira_changelog_by_issue ON jira_changelog (site, issue_id, created_at_ms);

-- A comment on an issue.
CREATE TABLE jira_comments (
    site                        TEXT  NOT NULL,
    id                          BIGINT  NOT NULL,
    issue_id                    BIGINT  NOT NULL,
    author_account_id           TEXT,
    body                        TEXT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE INDEX jira_comments_by_issue ON jira_comments (site, issue_id);

-- Time logged on an issue.
CREATE TABLE jira_worklogs (
    site                        TEXT  NOT NULL,
    id                          BIGINT  NOT NULL,
    issue_id                    BIGINT  NOT NULL,
    author_account_id           TEXT,
    started_at_ms               BIGINT,
    time_spent_seconds          BIGINT,
    created_at_ms               BIGINT,
    updated_at_ms               BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE INDEX jira_worklogs_by_issue ON jira_worklogs (site, issue_id);

-- An agile board.
CREATE TABLE jira_boards (
    site                        TEXT  NOT NULL,
    id                          BIGINT  NOT NULL,
    name                        TEXT,
    board_type                  TEXT,
    project_id                  BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, id)
);

-- A sprint of a scrum board.
CREATE TABLE jira_sprints (
    site                        TEXT  NOT NULL,
    id                          BIGINT  NOT NULL,
    board_id                    BIGINT,
    name                        TEXT,
    state                       TEXT,
    goal                        TEXT,
    start_at_ms                 BIGINT,
    end_at_ms                   BIGINT,
    complete_at_ms              BIGINT,
    raw_json                    TEXT,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, id)
);
CREATE INDEX jira_sprints_by_board ON jira_sprints (site, board_id);

-- Where a scope's incremental collection stands: issues updated since this instant were asked for.
CREATE TABLE jira_watermarks (
    site                        TEXT  NOT NULL,
    scope                       TEXT  NOT NULL,
    collected_at_ms             BIGINT  NOT NULL,
    PRIMARY KEY (site, scope)
);

CREATE VIEW jira_projects_readable AS SELECT
    site,
    id,
    key,
    name,
    project_type,
    lead_account_id,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_projects;

CREATE VIEW jira_issues_readable AS SELECT
    site,
    id,
    key,
    project_id,
    summary,
    issue_type,
    status,
    status_category,
    priority,
    assignee_account_id,
    reporter_account_id,
    parent_id,
    labels,
    story_points,
    original_estimate_seconds,
    time_spent_seconds,
    due_date,
    created_at_ms,
    updated_at_ms,
    resolved_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', resolved_at_ms / 1000.0, 'unixepoch') AS resolved_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_issues;

CREATE VIEW jira_issue_sprints_readable AS SELECT
    site,
    issue_id,
    sprint_id,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_issue_sprints;

CREATE VIEW jira_changelog_readable AS SELECT
    site,
    id,
    issue_id,
    author_account_id,
    created_at_ms,
    items,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_changelog;

CREATE VIEW jira_comments_readable AS SELECT
    site,
    id,
    issue_id,
    author_account_id,
    body,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_comments;

CREATE VIEW jira_worklogs_readable AS SELECT
    site,
    id,
    issue_id,
    author_account_id,
    started_at_ms,
    time_spent_seconds,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', started_at_ms / 1000.0, 'unixepoch') AS started_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_worklogs;

CREATE VIEW jira_boards_readable AS SELECT
    site,
    id,
    name,
    board_type,
    project_id,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_boards;

CREATE VIEW jira_sprints_readable AS SELECT
    site,
    id,
    board_id,
    name,
    state,
    goal,
    start_at_ms,
    end_at_ms,
    complete_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', start_at_ms / 1000.0, 'unixepoch') AS start_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', end_at_ms / 1000.0, 'unixepoch') AS end_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', complete_at_ms / 1000.0, 'unixepoch') AS complete_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_sprints;

CREATE VIEW jira_watermarks_readable AS SELECT
    site,
    scope,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM jira_watermarks;
