-- Every provider's quota owner is a kind of subject: a LaunchDarkly account, a Jira site (its
-- API-token traffic) and an OAuth app (Jira's points) join the user, the installation and the
-- IP.
ALTER TABLE credentials DROP CONSTRAINT credentials_subject_kind_check;
ALTER TABLE credentials ADD CONSTRAINT credentials_subject_kind_check
    CHECK (subject_kind IN ('user', 'installation', 'ip', 'account', 'site', 'app'));
