-- GitLab group sync: one table per route family, every identity led by `instance` (the API's
-- host: GitLab's ids are unique only within one instance). No foreign keys between them: a
-- page of children may land before its parent is refreshed, and a project deleted mid-run
-- must not fail a write. Instants are epoch milliseconds (`*_at_ms`); lists of names
-- (`approved_by`, `labels`) are JSON arrays; `raw_json` keeps what GitLab sent.
CREATE TABLE gitlab_groups (
    instance            TEXT    NOT NULL,
    id                  BIGINT  NOT NULL,
    parent_id           BIGINT,
    full_path           TEXT    NOT NULL,
    name                TEXT,
    web_url             TEXT,
    created_at_ms       BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, id)
);
CREATE INDEX gitlab_groups_by_path ON gitlab_groups (instance, full_path);
CREATE INDEX gitlab_groups_by_parent ON gitlab_groups (instance, parent_id);

CREATE TABLE gitlab_projects (
    instance            TEXT    NOT NULL,
    id                  BIGINT  NOT NULL,
    namespace_id        BIGINT,
    path_with_namespace TEXT    NOT NULL,
    name                TEXT,
    default_branch      TEXT,
    visibility          TEXT,
    archived            BOOLEAN,
    web_url             TEXT,
    created_at_ms       BIGINT,
    last_activity_at_ms BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, id)
);
CREATE INDEX gitlab_projects_by_namespace ON gitlab_projects (instance, namespace_id);
CREATE INDEX gitlab_projects_by_path ON gitlab_projects (instance, path_with_namespace);

CREATE TABLE gitlab_merge_requests (
    instance            TEXT    NOT NULL,
    project_id          BIGINT  NOT NULL,
    iid                 BIGINT  NOT NULL,
    id                  BIGINT  NOT NULL,
    title               TEXT,
    state               TEXT,
    draft               BOOLEAN,
    author              TEXT,
    source_branch       TEXT,
    target_branch       TEXT,
    sha                 TEXT,
    merge_commit_sha    TEXT,
    squash_commit_sha   TEXT,
    merged_by           TEXT,
    created_at_ms       BIGINT,
    updated_at_ms       BIGINT,
    merged_at_ms        BIGINT,
    closed_at_ms        BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, project_id, iid)
);
CREATE INDEX gitlab_merge_requests_updated ON gitlab_merge_requests (instance, project_id, updated_at_ms);
CREATE INDEX gitlab_merge_requests_merged ON gitlab_merge_requests (instance, merged_at_ms);

CREATE TABLE gitlab_merge_request_commits (
    instance            TEXT    NOT NULL,
    project_id          BIGINT  NOT NULL,
    merge_request_iid   BIGINT  NOT NULL,
    sha                 TEXT    NOT NULL,
    title               TEXT,
    author_name         TEXT,
    authored_at_ms      BIGINT,
    committed_at_ms     BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, project_id, merge_request_iid, sha)
);
-- Which merge requests carried a commit (a deployment's or pipeline's SHA).
CREATE INDEX gitlab_merge_request_commits_by_sha ON gitlab_merge_request_commits (instance, project_id, sha);

-- One row per merge request: its approval state as last read.
CREATE TABLE gitlab_merge_request_approvals (
    instance            TEXT    NOT NULL,
    project_id          BIGINT  NOT NULL,
    merge_request_iid   BIGINT  NOT NULL,
    approved            BOOLEAN,
    approvals_required  BIGINT,
    approvals_left      BIGINT,
    approved_by         TEXT   NOT NULL,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, project_id, merge_request_iid)
);

CREATE TABLE gitlab_notes (
    instance            TEXT    NOT NULL,
    id                  BIGINT  NOT NULL,
    project_id          BIGINT  NOT NULL,
    noteable_type       TEXT    NOT NULL,
    noteable_iid        BIGINT  NOT NULL,
    author              TEXT,
    body                TEXT,
    system              BOOLEAN,
    created_at_ms       BIGINT,
    updated_at_ms       BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, id)
);
CREATE INDEX gitlab_notes_by_noteable ON gitlab_notes (instance, project_id, noteable_type, noteable_iid);
CREATE INDEX gitlab_notes_updated ON gitlab_notes (instance, project_id, updated_at_ms);

CREATE TABLE gitlab_pipelines (
    instance            TEXT    NOT NULL,
    id                  BIGINT  NOT NULL,
    project_id          BIGINT  NOT NULL,
    iid                 BIGINT,
    status              TEXT,
    source              TEXT,
    ref_name            TEXT,
    sha                 TEXT,
    created_at_ms       BIGINT,
    updated_at_ms       BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, id)
);
CREATE INDEX gitlab_pipelines_updated ON gitlab_pipelines (instance, project_id, updated_at_ms);
CREATE INDEX gitlab_pipelines_by_sha ON gitlab_pipelines (instance, project_id, sha);

CREATE TABLE gitlab_jobs (
    instance            TEXT    NOT NULL,
    id                  BIGINT  NOT NULL,
    project_id          BIGINT  NOT NULL,
    pipeline_id         BIGINT  NOT NULL,
    name                TEXT,
    stage               TEXT,
    status              TEXT,
    ref_name            TEXT,
    created_at_ms       BIGINT,
    started_at_ms       BIGINT,
    finished_at_ms      BIGINT,
    duration_ms         BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, id)
);
CREATE INDEX gitlab_jobs_by_pipeline ON gitlab_jobs (instance, pipeline_id);
CREATE INDEX gitlab_jobs_by_project ON gitlab_jobs (instance, project_id, created_at_ms);

CREATE TABLE gitlab_issues (
    instance            TEXT    NOT NULL,
    id                  BIGINT  NOT NULL,
    project_id          BIGINT  NOT NULL,
    iid                 BIGINT  NOT NULL,
    title               TEXT,
    state               TEXT,
    author              TEXT,
    labels              TEXT   NOT NULL,
    milestone_id        BIGINT,
    created_at_ms       BIGINT,
    updated_at_ms       BIGINT,
    closed_at_ms        BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, id)
);
CREATE INDEX gitlab_issues_by_iid ON gitlab_issues (instance, project_id, iid);
CREATE INDEX gitlab_issues_updated ON gitlab_issues (instance, project_id, updated_at_ms);
CREATE INDEX gitlab_issues_by_milestone ON gitlab_issues (instance, milestone_id);

-- A project's milestone has `project_id`, a group's `group_id`.
CREATE TABLE gitlab_milestones (
    instance            TEXT    NOT NULL,
    id                  BIGINT  NOT NULL,
    project_id          BIGINT,
    group_id            BIGINT,
    iid                 BIGINT,
    title               TEXT,
    state               TEXT,
    start_date          TEXT,
    due_date            TEXT,
    created_at_ms       BIGINT,
    updated_at_ms       BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, id)
);
CREATE INDEX gitlab_milestones_by_project ON gitlab_milestones (instance, project_id);
CREATE INDEX gitlab_milestones_by_group ON gitlab_milestones (instance, group_id);

CREATE TABLE gitlab_deployments (
    instance            TEXT    NOT NULL,
    id                  BIGINT  NOT NULL,
    project_id          BIGINT  NOT NULL,
    iid                 BIGINT,
    ref_name            TEXT,
    sha                 TEXT,
    status              TEXT,
    environment         TEXT,
    created_at_ms       BIGINT,
    updated_at_ms       BIGINT,
    finished_at_ms      BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, id)
);
CREATE INDEX gitlab_deployments_updated ON gitlab_deployments (instance, project_id, updated_at_ms);
CREATE INDEX gitlab_deployments_by_environment ON gitlab_deployments (instance, project_id, environment, finished_at_ms);

CREATE TABLE gitlab_releases (
    instance            TEXT    NOT NULL,
    project_id          BIGINT  NOT NULL,
    tag_name            TEXT    NOT NULL,
    name                TEXT,
    commit_sha          TEXT,
    created_at_ms       BIGINT,
    released_at_ms      BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, project_id, tag_name)
);

CREATE TABLE gitlab_feature_flags (
    instance            TEXT    NOT NULL,
    project_id          BIGINT  NOT NULL,
    name                TEXT    NOT NULL,
    active              BOOLEAN,
    version             TEXT,
    description         TEXT,
    created_at_ms       BIGINT,
    updated_at_ms       BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, project_id, name)
);

-- Where each project's incremental families resume (`updated_after`): the instant the last
-- finished collection started. An upsert never moves it back.
CREATE TABLE gitlab_watermarks (
    instance            TEXT    NOT NULL,
    project_id          BIGINT  NOT NULL,
    family              TEXT    NOT NULL,
    collected_at_ms     BIGINT  NOT NULL,
    PRIMARY KEY (instance, project_id, family)
);

-- One `<table>_readable` view per table with instants: the table's columns, then each
-- epoch-milliseconds instant (`*_at_ms`) again as ISO 8601 UTC text without `_ms`, for
-- people reading the database (sqlite3, psql, Datasette). The code keys on the
-- milliseconds and never reads these views. Written by scripts/readable_views.py.

CREATE VIEW gitlab_deployments_readable AS SELECT
    instance,
    id,
    project_id,
    iid,
    ref_name,
    sha,
    status,
    environment,
    created_at_ms,
    updated_at_ms,
    finished_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', finished_at_ms / 1000.0, 'unixepoch') AS finished_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_deployments;

CREATE VIEW gitlab_feature_flags_readable AS SELECT
    instance,
    project_id,
    name,
    active,
    version,
    description,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_feature_flags;

CREATE VIEW gitlab_groups_readable AS SELECT
    instance,
    id,
    parent_id,
    full_path,
    name,
    web_url,
    created_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_groups;

CREATE VIEW gitlab_issues_readable AS SELECT
    instance,
    id,
    project_id,
    iid,
    title,
    state,
    author,
    labels,
    milestone_id,
    created_at_ms,
    updated_at_ms,
    closed_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', closed_at_ms / 1000.0, 'unixepoch') AS closed_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_issues;

CREATE VIEW gitlab_jobs_readable AS SELECT
    instance,
    id,
    project_id,
    pipeline_id,
    name,
    stage,
    status,
    ref_name,
    created_at_ms,
    started_at_ms,
    finished_at_ms,
    duration_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', started_at_ms / 1000.0, 'unixepoch') AS started_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', finished_at_ms / 1000.0, 'unixepoch') AS finished_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_jobs;

CREATE VIEW gitlab_merge_request_approvals_readable AS SELECT
    instance,
    project_id,
    merge_request_iid,
    approved,
    approvals_required,
    approvals_left,
    approved_by,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_merge_request_approvals;

CREATE VIEW gitlab_merge_request_commits_readable AS SELECT
    instance,
    project_id,
    merge_request_iid,
    sha,
    title,
    author_name,
    authored_at_ms,
    committed_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', authored_at_ms / 1000.0, 'unixepoch') AS authored_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', committed_at_ms / 1000.0, 'unixepoch') AS committed_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_merge_request_commits;

CREATE VIEW gitlab_merge_requests_readable AS SELECT
    instance,
    project_id,
    iid,
    id,
    title,
    state,
    draft,
    author,
    source_branch,
    target_branch,
    sha,
    merge_commit_sha,
    squash_commit_sha,
    merged_by,
    created_at_ms,
    updated_at_ms,
    merged_at_ms,
    closed_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', merged_at_ms / 1000.0, 'unixepoch') AS merged_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', closed_at_ms / 1000.0, 'unixepoch') AS closed_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_merge_requests;

CREATE VIEW gitlab_milestones_readable AS SELECT
    instance,
    id,
    project_id,
    group_id,
    iid,
    title,
    state,
    start_date,
    due_date,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_milestones;

CREATE VIEW gitlab_notes_readable AS SELECT
    instance,
    id,
    project_id,
    noteable_type,
    noteable_iid,
    author,
    body,
    system,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_notes;

CREATE VIEW gitlab_pipelines_readable AS SELECT
    instance,
    id,
    project_id,
    iid,
    status,
    source,
    ref_name,
    sha,
    created_at_ms,
    updated_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', updated_at_ms / 1000.0, 'unixepoch') AS updated_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_pipelines;

CREATE VIEW gitlab_projects_readable AS SELECT
    instance,
    id,
    namespace_id,
    path_with_namespace,
    name,
    default_branch,
    visibility,
    archived,
    web_url,
    created_at_ms,
    last_activity_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', last_activity_at_ms / 1000.0, 'unixepoch') AS last_activity_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_projects;

CREATE VIEW gitlab_releases_readable AS SELECT
    instance,
    project_id,
    tag_name,
    name,
    commit_sha,
    created_at_ms,
    released_at_ms,
    raw_json,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', created_at_ms / 1000.0, 'unixepoch') AS created_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', released_at_ms / 1000.0, 'unixepoch') AS released_at,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_releases;

CREATE VIEW gitlab_watermarks_readable AS SELECT
    instance,
    project_id,
    family,
    collected_at_ms,
    strftime('%Y-%m-%dT%H:%M:%fZ', collected_at_ms / 1000.0, 'unixepoch') AS collected_at
FROM gitlab_watermarks;
