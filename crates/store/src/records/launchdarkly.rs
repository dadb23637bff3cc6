//! Rows of the LaunchDarkly sync tables (`ld_*`). LaunchDarkly's keys are unique only within
//! one account, so every row's identity starts with `account` (the account id that
//! `caller-identity` names): one database can hold several accounts without their keys meeting.
//! Each row keeps what LaunchDarkly sent (`raw`) beside the typed fields a query reads. Members
//! are named by their `_id`, never by e-mail address.

use headroom_core::clock::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

/// A project (`Project`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdProject {
    /// The account's id.
    pub account: String,
    /// The project's key (`key`).
    pub key: String,
    /// The project's id (`_id`).
    pub id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// What LaunchDarkly sent (less environments' SDK and mobile keys).
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An environment of a project (`Environment`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdEnvironment {
    /// The account's id.
    pub account: String,
    /// Its project's key.
    pub project_key: String,
    /// The environment's key, unique within its project.
    pub key: String,
    /// The environment's id (`_id`, the client-side id: not a secret).
    pub id: Option<String>,
    /// Display name.
    pub name: Option<String>,
    /// The UI's colour (`F5A623`).
    pub color: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Whether the environment is critical.
    pub critical: Option<bool>,
    /// What LaunchDarkly sent, less `apiKey` and `mobileKey` (credentials).
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A feature flag of a project (`FeatureFlag`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdFlag {
    /// The account's id.
    pub account: String,
    /// Its project's key.
    pub project_key: String,
    /// The flag's key.
    pub key: String,
    /// Display name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// `boolean` or `multivariate`.
    pub kind: Option<String>,
    /// Whether the flag is temporary.
    pub temporary: Option<bool>,
    /// Tags.
    pub tags: Vec<String>,
    /// The flag's version (`_version`).
    pub version: Option<i64>,
    /// Created (`creationDate`).
    pub created_at: Option<Timestamp>,
    /// The maintaining member's id (`maintainerId`).
    pub maintainer_id: Option<String>,
    /// The maintaining team's key (`maintainerTeamKey`).
    pub maintainer_team_key: Option<String>,
    /// Archived.
    pub archived: Option<bool>,
    /// When archived (`archivedDate`).
    pub archived_at: Option<Timestamp>,
    /// Deprecated.
    pub deprecated: Option<bool>,
    /// When deprecated (`deprecatedDate`).
    pub deprecated_at: Option<Timestamp>,
    /// What LaunchDarkly sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A flag's configuration in one environment (`FeatureFlagConfig`): its state and a summary
/// of its targeting.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdFlagEnvironment {
    /// The account's id.
    pub account: String,
    /// The flag's project's key.
    pub project_key: String,
    /// The flag's key.
    pub flag_key: String,
    /// The environment's key.
    pub environment_key: String,
    /// The environment's name (`_environmentName`).
    pub environment_name: Option<String>,
    /// Whether the flag is on (`on`).
    pub is_on: Option<bool>,
    /// Archived.
    pub archived: Option<bool>,
    /// The configuration's version.
    pub version: Option<i64>,
    /// Last modified (`lastModified`).
    pub last_modified_at: Option<Timestamp>,
    /// Targeting rules: `rules` when sent, else the sum of `_summary`'s per-variation `rules`.
    pub rules_count: Option<i64>,
    /// Individual user targets: the keys of `targets`, else `_summary`'s `targets`.
    pub targets_count: Option<i64>,
    /// Individual targets of other context kinds: the keys of `contextTargets`, else
    /// `_summary`'s `contextTargets`.
    pub context_targets_count: Option<i64>,
    /// Prerequisite flags: `prerequisites` when sent, else `_summary.prerequisites`.
    pub prerequisites_count: Option<i64>,
    /// The variation the default rule serves (`fallthrough.variation`), when not a rollout.
    pub fallthrough_variation: Option<i64>,
    /// Whether the default rule is a percentage rollout (`fallthrough.rollout`).
    pub fallthrough_rollout: Option<bool>,
    /// The variation served when the flag is off (`offVariation`).
    pub off_variation: Option<i64>,
    /// What LaunchDarkly sent for this environment.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A segment of an environment (`UserSegment`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdSegment {
    /// The account's id.
    pub account: String,
    /// Its project's key.
    pub project_key: String,
    /// Its environment's key.
    pub environment_key: String,
    /// The segment's key.
    pub key: String,
    /// Display name.
    pub name: Option<String>,
    /// Description.
    pub description: Option<String>,
    /// Tags.
    pub tags: Vec<String>,
    /// Whether it is a big (unbounded) segment.
    pub unbounded: Option<bool>,
    /// The segment's version.
    pub version: Option<i64>,
    /// Whether it was deleted.
    pub deleted: Option<bool>,
    /// Created (`creationDate`).
    pub created_at: Option<Timestamp>,
    /// Last modified (`lastModifiedDate`).
    pub last_modified_at: Option<Timestamp>,
    /// What LaunchDarkly sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A member of the account (`Member`); the e-mail address stays in `raw` only.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdMember {
    /// The account's id.
    pub account: String,
    /// The member's id (`_id`).
    pub id: String,
    /// The base role (`reader`, `writer`, `admin`, `owner`, `no_access`).
    pub role: Option<String>,
    /// First name.
    pub first_name: Option<String>,
    /// Last name.
    pub last_name: Option<String>,
    /// The custom roles' keys (`customRoles`).
    pub custom_roles: Vec<String>,
    /// Whether the invitation is pending (`_pendingInvite`).
    pub pending_invite: Option<bool>,
    /// Multi-factor authentication (`mfa`).
    pub mfa: Option<String>,
    /// Created (`creationDate`).
    pub created_at: Option<Timestamp>,
    /// Last session (`_lastSeen`).
    pub last_seen_at: Option<Timestamp>,
    /// What LaunchDarkly sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// An entry of the account's audit log (`AuditLogEntryListingRep`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdAuditEntry {
    /// The account's id.
    pub account: String,
    /// The entry's id (`_id`).
    pub id: String,
    /// When it happened (`date`).
    pub date: Timestamp,
    /// The kind of resource (`flag`, `segment`, `member`, …).
    pub kind: Option<String>,
    /// The resource's name.
    pub name: Option<String>,
    /// The change, as LaunchDarkly describes it.
    pub description: Option<String>,
    /// Its shorter version (`shortDescription`).
    pub short_description: Option<String>,
    /// The comment given with the change.
    pub comment: Option<String>,
    /// The acting member's id (`member._id`).
    pub member_id: Option<String>,
    /// The target's name (`target.name`).
    pub target_name: Option<String>,
    /// The target's resource specifiers (`target.resources`).
    pub target_resources: Vec<String>,
    /// The actions performed and resources acted on (`accesses`: `{action, resource}`).
    pub accesses: Json,
    /// What LaunchDarkly sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A repository scanned for code references (`RepositoryRep`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LdCodeRefRepository {
    /// The account's id.
    pub account: String,
    /// The repository's name.
    pub name: String,
    /// `bitbucket`, `custom`, `github` or `gitlab` (`type`).
    pub repo_type: Option<String>,
    /// The default branch (`defaultBranch`).
    pub default_branch: Option<String>,
    /// Its URL (`sourceLink`).
    pub source_link: Option<String>,
    /// Whether it is scanned.
    pub enabled: Option<bool>,
    /// The version of its saved information.
    pub version: Option<i64>,
    /// The default branch's scanned commit (`branches[].head`), when branches were asked.
    pub default_branch_head: Option<String>,
    /// The latest scan of any branch (`branches[].syncTime`), when branches were asked.
    pub last_synced_at: Option<Timestamp>,
    /// What LaunchDarkly sent.
    pub raw: Json,
    /// When collected.
    pub collected_at: Timestamp,
}

/// A row of one of the `ld_*` tables.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum LdRecord {
    /// `ld_projects`.
    Project(LdProject),
    /// `ld_environments`.
    Environment(LdEnvironment),
    /// `ld_flags`.
    Flag(LdFlag),
    /// `ld_flag_environments`.
    FlagEnvironment(LdFlagEnvironment),
    /// `ld_segments`.
    Segment(LdSegment),
    /// `ld_members`.
    Member(LdMember),
    /// `ld_audit_entries`.
    AuditEntry(LdAuditEntry),
    /// `ld_code_ref_repositories`.
    CodeRefRepository(LdCodeRefRepository),
}
