-- A project's number is unique per owner, and the projects linked to an organization's
-- repositories may belong to users whose numbers collide with the organization's own: the
-- identity of a project is its node id alone.
ALTER TABLE projects DROP CONSTRAINT projects_organization_id_number_key;
CREATE INDEX projects_by_number ON projects (organization_id, number);
