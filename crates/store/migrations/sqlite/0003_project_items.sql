-- The items on a project's board (issues, pull requests, drafts), one row each: a project
-- can hold far more items than one page, and each page of them is committed with its cursor.
CREATE TABLE project_items (
    id                  INTEGER PRIMARY KEY,
    project_node_id     TEXT    NOT NULL,
    node_id             TEXT    NOT NULL UNIQUE,
    github_id           BIGINT,
    item_type           TEXT,
    content_node_id     TEXT,
    content_number      BIGINT,
    content_repository  TEXT,
    title               TEXT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL
);
CREATE INDEX project_items_by_project ON project_items (project_node_id);
