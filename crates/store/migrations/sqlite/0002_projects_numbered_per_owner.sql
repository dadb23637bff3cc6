-- A project's number is unique per owner, and the projects linked to an organization's
-- repositories may belong to users whose numbers collide with the organization's own: the
-- identity of a project is its node id alone. SQLite drops a table constraint by rebuilding
-- the table.
CREATE TABLE projects_rebuilt (
    id                  INTEGER PRIMARY KEY,
    organization_id     BIGINT  NOT NULL REFERENCES organizations (id),
    node_id             TEXT    NOT NULL UNIQUE,
    number              BIGINT  NOT NULL,
    title               TEXT    NOT NULL,
    closed              BOOLEAN NOT NULL DEFAULT FALSE,
    url                 TEXT,
    items_count         BIGINT,
    github_created_at_ms BIGINT,
    github_updated_at_ms BIGINT,
    raw_json            TEXT  ,
    collected_at_ms     BIGINT  NOT NULL
);
INSERT INTO projects_rebuilt SELECT id, organization_id, node_id, number, title, closed, url,
    items_count, github_created_at_ms, github_updated_at_ms, raw_json, collected_at_ms
    FROM projects;
DROP TABLE projects;
ALTER TABLE projects_rebuilt RENAME TO projects;
CREATE INDEX projects_by_number ON projects (organization_id, number);
