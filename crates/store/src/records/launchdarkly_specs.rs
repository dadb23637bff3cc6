//! Each LaunchDarkly record's row: its `ld_*` table, identity (always led by `account`) and
//! column values. Instants are `*_at_ms`, lists JSON arrays, what the provider sent `raw_json`.

use super::launchdarkly::*;
use super::{Record, RowSpec, at, json, keyed, names, oat, obool, oint, otext, text};

impl LdRecord {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        match self {
            LdRecord::Project(r) => r.spec(),
            LdRecord::Environment(r) => r.spec(),
            LdRecord::Flag(r) => r.spec(),
            LdRecord::FlagEnvironment(r) => r.spec(),
            LdRecord::Segment(r) => r.spec(),
            LdRecord::Member(r) => r.spec(),
            LdRecord::AuditEntry(r) => r.spec(),
            LdRecord::CodeRefRepository(r) => r.spec(),
        }
    }
}

/// `impl From<$row> for Record`, through its [`LdRecord`] variant.
macro_rules! into_record {
    ($($row:ident => $variant:ident),* $(,)?) => {$(
        impl From<$row> for Record {
            fn from(r: $row) -> Self {
                Record::Launchdarkly(LdRecord::$variant(r))
            }
        }
    )*};
}

into_record!(
    LdProject => Project,
    LdEnvironment => Environment,
    LdFlag => Flag,
    LdFlagEnvironment => FlagEnvironment,
    LdSegment => Segment,
    LdMember => Member,
    LdAuditEntry => AuditEntry,
    LdCodeRefRepository => CodeRefRepository,
);

impl LdProject {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "ld_projects",
            &["account", "key"],
            vec![
                ("account", text(&self.account)),
                ("key", text(&self.key)),
                ("id", otext(&self.id)),
                ("name", otext(&self.name)),
                ("tags", names(&self.tags)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl LdEnvironment {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "ld_environments",
            &["account", "project_key", "key"],
            vec![
                ("account", text(&self.account)),
                ("project_key", text(&self.project_key)),
                ("key", text(&self.key)),
                ("id", otext(&self.id)),
                ("name", otext(&self.name)),
                ("color", otext(&self.color)),
                ("tags", names(&self.tags)),
                ("critical", obool(self.critical)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl LdFlag {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "ld_flags",
            &["account", "project_key", "key"],
            vec![
                ("account", text(&self.account)),
                ("project_key", text(&self.project_key)),
                ("key", text(&self.key)),
                ("name", otext(&self.name)),
                ("description", otext(&self.description)),
                ("kind", otext(&self.kind)),
                ("temporary", obool(self.temporary)),
                ("tags", names(&self.tags)),
                ("version", oint(self.version)),
                ("created_at_ms", oat(self.created_at)),
                ("maintainer_id", otext(&self.maintainer_id)),
                ("maintainer_team_key", otext(&self.maintainer_team_key)),
                ("archived", obool(self.archived)),
                ("archived_at_ms", oat(self.archived_at)),
                ("deprecated", obool(self.deprecated)),
                ("deprecated_at_ms", oat(self.deprecated_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl LdFlagEnvironment {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "ld_flag_environments",
            &["account", "project_key", "flag_key", "environment_key"],
            vec![
                ("account", text(&self.account)),
                ("project_key", text(&self.project_key)),
                ("flag_key", text(&self.flag_key)),
                ("environment_key", text(&self.environment_key)),
                ("environment_name", otext(&self.environment_name)),
                ("is_on", obool(self.is_on)),
                ("archived", obool(self.archived)),
                ("version", oint(self.version)),
                ("last_modified_at_ms", oat(self.last_modified_at)),
                ("rules_count", oint(self.rules_count)),
                ("targets_count", oint(self.targets_count)),
                ("context_targets_count", oint(self.context_targets_count)),
                ("prerequisites_count", oint(self.prerequisites_count)),
                ("fallthrough_variation", oint(self.fallthrough_variation)),
                ("fallthrough_rollout", obool(self.fallthrough_rollout)),
                ("off_variation", oint(self.off_variation)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl LdSegment {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "ld_segments",
            &["account", "project_key", "environment_key", "key"],
            vec![
                ("account", text(&self.account)),
                ("project_key", text(&self.project_key)),
                ("environment_key", text(&self.environment_key)),
                ("key", text(&self.key)),
                ("name", otext(&self.name)),
                ("description", otext(&self.description)),
                ("tags", names(&self.tags)),
                ("unbounded", obool(self.unbounded)),
                ("version", oint(self.version)),
                ("deleted", obool(self.deleted)),
                ("created_at_ms", oat(self.created_at)),
                ("last_modified_at_ms", oat(self.last_modified_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl LdMember {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "ld_members",
            &["account", "id"],
            vec![
                ("account", text(&self.account)),
                ("id", text(&self.id)),
                ("role", otext(&self.role)),
                ("first_name", otext(&self.first_name)),
                ("last_name", otext(&self.last_name)),
                ("custom_roles", names(&self.custom_roles)),
                ("pending_invite", obool(self.pending_invite)),
                ("mfa", otext(&self.mfa)),
                ("created_at_ms", oat(self.created_at)),
                ("last_seen_at_ms", oat(self.last_seen_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl LdAuditEntry {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "ld_audit_entries",
            &["account", "id"],
            vec![
                ("account", text(&self.account)),
                ("id", text(&self.id)),
                ("date_at_ms", at(self.date)),
                ("kind", otext(&self.kind)),
                ("name", otext(&self.name)),
                ("description", otext(&self.description)),
                ("short_description", otext(&self.short_description)),
                ("comment", otext(&self.comment)),
                ("member_id", otext(&self.member_id)),
                ("target_name", otext(&self.target_name)),
                ("target_resources", names(&self.target_resources)),
                ("accesses", json(&self.accesses)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}

impl LdCodeRefRepository {
    /// The row this record writes.
    pub(crate) fn spec(&self) -> RowSpec {
        keyed(
            "ld_code_ref_repositories",
            &["account", "name"],
            vec![
                ("account", text(&self.account)),
                ("name", text(&self.name)),
                ("repo_type", otext(&self.repo_type)),
                ("default_branch", otext(&self.default_branch)),
                ("source_link", otext(&self.source_link)),
                ("enabled", obool(self.enabled)),
                ("version", oint(self.version)),
                ("default_branch_head", otext(&self.default_branch_head)),
                ("last_synced_at_ms", oat(self.last_synced_at)),
                ("raw_json", json(&self.raw)),
                ("collected_at_ms", at(self.collected_at)),
            ],
        )
    }
}
