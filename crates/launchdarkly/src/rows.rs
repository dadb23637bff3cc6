//! LaunchDarkly's REST objects to the store's typed rows (`headroom_store::launchdarkly`), the
//! object kept raw beside. Field names are those of LaunchDarkly's published OpenAPI
//! description (`FeatureFlag`, `FeatureFlagConfig`, `Project`, `Environment`, `UserSegment`,
//! `Member`, `AuditLogEntryListingRep`, `RepositoryRep`). Instants come as epoch milliseconds
//! (`UnixMillis`). An object without its key or id is skipped, not stored half.
//!
//! Two things never leave `raw` for a column, and one never reaches the database at all:
//! members and audit entries are kept by member `_id`, e-mail addresses stay in `raw` only (as
//! Jira's rows do); an environment's `apiKey` (the SDK key) and `mobileKey` are credentials,
//! so they are taken out of `raw` before it is stored ("tokens never in the database").

use headroom_store::Record;
use headroom_store::launchdarkly::{
    LdAuditEntry, LdCodeRefRepository, LdEnvironment, LdFlag, LdFlagEnvironment, LdMember,
    LdProject, LdSegment,
};
use jiff::Timestamp;
use serde_json::Value;

/// Where a row was read: the account (its id, from `caller-identity`) and when.
#[derive(Debug, Clone, Copy)]
pub struct Origin<'a> {
    /// The account's id (`CallerIdentityRep.accountId`).
    pub account: &'a str,
    /// When collected.
    pub now: Timestamp,
}

/// An environment's fields that are credentials (`Environment.apiKey`, `.mobileKey`).
const SECRET_FIELDS: [&str; 2] = ["apiKey", "mobileKey"];

/// The `items` of a collection page (`{items, _links, totalCount}`); none when absent.
pub fn items(page: &Value) -> &[Value] {
    page.get("items")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default()
}

fn text(v: &Value, field: &str) -> Option<String> {
    v.get(field).and_then(Value::as_str).map(str::to_owned)
}

/// A key or id: a non-empty string (an empty one identifies nothing).
fn key(v: &Value, field: &str) -> Option<String> {
    text(v, field).filter(|k| !k.is_empty())
}

fn int(v: &Value, field: &str) -> Option<i64> {
    v.get(field).and_then(Value::as_i64)
}

fn boolean(v: &Value, field: &str) -> Option<bool> {
    v.get(field).and_then(Value::as_bool)
}

/// A `UnixMillis` instant: an integer (the schema's type), or a string of digits (how the
/// description's examples write some of them).
fn millis(v: &Value, field: &str) -> Option<Timestamp> {
    let ms = match v.get(field)? {
        Value::String(s) => s.parse().ok()?,
        other => other.as_i64()?,
    };
    Timestamp::from_millisecond(ms).ok()
}

/// The strings of the array under `field`, in order (other elements ignored).
fn strings(v: &Value, field: &str) -> Vec<String> {
    v.get(field)
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(Value::as_str)
                .map(str::to_owned)
                .collect()
        })
        .unwrap_or_default()
}

/// `v` without an environment's credentials.
fn without_secrets(mut v: Value) -> Value {
    if let Some(fields) = v.as_object_mut() {
        for secret in SECRET_FIELDS {
            fields.remove(secret);
        }
    }
    v
}

/// A project of `GET /api/v2/projects` (`Project`), and the environments it carries when
/// asked with `expand=environments`.
pub fn project_rows(v: &Value, o: Origin<'_>) -> Vec<Record> {
    let Some(project_key) = key(v, "key") else {
        return Vec::new();
    };
    let environments: Vec<Record> = v
        .get("environments")
        .map(items)
        .unwrap_or_default()
        .iter()
        .flat_map(|e| environment_rows(e, &project_key, o))
        .collect();
    let mut raw = v.clone();
    if let Some(list) = raw
        .get_mut("environments")
        .and_then(|e| e.get_mut("items"))
        .and_then(Value::as_array_mut)
    {
        for e in list.iter_mut() {
            *e = without_secrets(std::mem::take(e));
        }
    }
    let mut rows = vec![Record::from(LdProject {
        account: o.account.to_owned(),
        key: project_key,
        id: text(v, "_id"),
        name: text(v, "name"),
        tags: strings(v, "tags"),
        raw,
        collected_at: o.now,
    })];
    rows.extend(environments);
    rows
}

/// An environment of `GET /api/v2/projects/{projectKey}/environments` (`Environment`), its
/// SDK and mobile keys left out.
pub fn environment_rows(v: &Value, project_key: &str, o: Origin<'_>) -> Vec<Record> {
    let Some(env_key) = key(v, "key") else {
        return Vec::new();
    };
    vec![Record::from(LdEnvironment {
        account: o.account.to_owned(),
        project_key: project_key.to_owned(),
        key: env_key,
        id: text(v, "_id"),
        name: text(v, "name"),
        color: text(v, "color"),
        tags: strings(v, "tags"),
        critical: boolean(v, "critical"),
        raw: without_secrets(v.clone()),
        collected_at: o.now,
    })]
}

/// A flag of `GET /api/v2/flags/{projectKey}` (`FeatureFlag`), then one row per environment
/// of its `environments` (`FeatureFlagConfig`, keyed by environment key).
pub fn flag_rows(v: &Value, project_key: &str, o: Origin<'_>) -> Vec<Record> {
    let Some(flag_key) = key(v, "key") else {
        return Vec::new();
    };
    let mut rows = vec![Record::from(LdFlag {
        account: o.account.to_owned(),
        project_key: project_key.to_owned(),
        key: flag_key.clone(),
        name: text(v, "name"),
        description: text(v, "description"),
        kind: text(v, "kind"),
        temporary: boolean(v, "temporary"),
        tags: strings(v, "tags"),
        version: int(v, "_version"),
        created_at: millis(v, "creationDate"),
        maintainer_id: text(v, "maintainerId"),
        maintainer_team_key: text(v, "maintainerTeamKey"),
        archived: boolean(v, "archived"),
        archived_at: millis(v, "archivedDate"),
        deprecated: boolean(v, "deprecated"),
        deprecated_at: millis(v, "deprecatedDate"),
        raw: v.clone(),
        collected_at: o.now,
    })];
    if let Some(environments) = v.get("environments").and_then(Value::as_object) {
        for (env_key, config) in environments {
            if env_key.is_empty() || !config.is_object() {
                continue;
            }
            rows.push(flag_environment(config, project_key, &flag_key, env_key, o));
        }
    }
    rows
}

/// The sum of one count over `_summary.variations` (`VariationSummary`), when summarized.
fn summed(config: &Value, count: &str) -> Option<i64> {
    let variations = config.get("_summary")?.get("variations")?.as_object()?;
    Some(variations.values().filter_map(|s| int(s, count)).sum())
}

/// How many keys the targets under `field` (`Target`: `values`, `variation`) name.
fn target_keys(config: &Value, field: &str) -> Option<i64> {
    let targets = config.get(field)?.as_array()?;
    let keys: usize = targets
        .iter()
        .map(|t| {
            t.get("values")
                .and_then(Value::as_array)
                .map_or(0, Vec::len)
        })
        .sum();
    i64::try_from(keys).ok()
}

fn length(config: &Value, field: &str) -> Option<i64> {
    i64::try_from(config.get(field)?.as_array()?.len()).ok()
}

/// One `FeatureFlagConfig`: its state, and its targeting counted from the lists when sent
/// (`summary=0`), else from `_summary`, the per-variation counts a summarized listing sends.
fn flag_environment(
    config: &Value,
    project_key: &str,
    flag_key: &str,
    env_key: &str,
    o: Origin<'_>,
) -> Record {
    let fallthrough = config.get("fallthrough").filter(|f| f.is_object());
    let summary_prerequisites = || config.get("_summary").and_then(|s| int(s, "prerequisites"));
    Record::from(LdFlagEnvironment {
        account: o.account.to_owned(),
        project_key: project_key.to_owned(),
        flag_key: flag_key.to_owned(),
        environment_key: env_key.to_owned(),
        environment_name: text(config, "_environmentName"),
        is_on: boolean(config, "on"),
        archived: boolean(config, "archived"),
        version: int(config, "version"),
        last_modified_at: millis(config, "lastModified"),
        rules_count: length(config, "rules").or_else(|| summed(config, "rules")),
        targets_count: target_keys(config, "targets").or_else(|| summed(config, "targets")),
        context_targets_count: target_keys(config, "contextTargets")
            .or_else(|| summed(config, "contextTargets")),
        prerequisites_count: length(config, "prerequisites").or_else(summary_prerequisites),
        fallthrough_variation: fallthrough.and_then(|f| int(f, "variation")),
        fallthrough_rollout: fallthrough.map(|f| f.get("rollout").is_some_and(|r| !r.is_null())),
        off_variation: int(config, "offVariation"),
        raw: config.clone(),
        collected_at: o.now,
    })
}

/// A segment of `GET /api/v2/segments/{projectKey}/{environmentKey}` (`UserSegment`).
pub fn segment_rows(
    v: &Value,
    project_key: &str,
    environment_key: &str,
    o: Origin<'_>,
) -> Vec<Record> {
    let Some(segment_key) = key(v, "key") else {
        return Vec::new();
    };
    vec![Record::from(LdSegment {
        account: o.account.to_owned(),
        project_key: project_key.to_owned(),
        environment_key: environment_key.to_owned(),
        key: segment_key,
        name: text(v, "name"),
        description: text(v, "description"),
        tags: strings(v, "tags"),
        unbounded: boolean(v, "unbounded"),
        version: int(v, "version"),
        deleted: boolean(v, "deleted"),
        created_at: millis(v, "creationDate"),
        last_modified_at: millis(v, "lastModifiedDate"),
        raw: v.clone(),
        collected_at: o.now,
    })]
}

/// A member of `GET /api/v2/members` (`Member`), named by `_id`.
pub fn member_rows(v: &Value, o: Origin<'_>) -> Vec<Record> {
    let Some(id) = key(v, "_id") else {
        return Vec::new();
    };
    vec![Record::from(LdMember {
        account: o.account.to_owned(),
        id,
        role: text(v, "role"),
        first_name: text(v, "firstName"),
        last_name: text(v, "lastName"),
        custom_roles: strings(v, "customRoles"),
        pending_invite: boolean(v, "_pendingInvite"),
        mfa: text(v, "mfa"),
        created_at: millis(v, "creationDate"),
        last_seen_at: millis(v, "_lastSeen"),
        raw: v.clone(),
        collected_at: o.now,
    })]
}

/// An entry of `GET /api/v2/auditlog` (`AuditLogEntryListingRep`). An entry without its `_id`
/// or its `date` is skipped: the date is the audit log's watermark.
pub fn audit_rows(v: &Value, o: Origin<'_>) -> Vec<Record> {
    let (Some(id), Some(date)) = (key(v, "_id"), millis(v, "date")) else {
        return Vec::new();
    };
    let target = v.get("target");
    let accesses = match v.get("accesses") {
        Some(list @ Value::Array(_)) => list.clone(),
        _ => Value::Array(Vec::new()),
    };
    vec![Record::from(LdAuditEntry {
        account: o.account.to_owned(),
        id,
        date,
        kind: text(v, "kind"),
        name: text(v, "name"),
        description: text(v, "description"),
        short_description: text(v, "shortDescription"),
        comment: text(v, "comment"),
        member_id: v.get("member").and_then(|m| text(m, "_id")),
        target_name: target.and_then(|t| text(t, "name")),
        target_resources: target.map(|t| strings(t, "resources")).unwrap_or_default(),
        accesses,
        raw: v.clone(),
        collected_at: o.now,
    })]
}

/// A repository of `GET /api/v2/code-refs/repositories` (`RepositoryRep`); with
/// `withBranches`, its default branch's scanned commit and its latest scan (`BranchRep`).
pub fn code_ref_rows(v: &Value, o: Origin<'_>) -> Vec<Record> {
    let Some(name) = key(v, "name") else {
        return Vec::new();
    };
    let default_branch = text(v, "defaultBranch");
    let branches = v
        .get("branches")
        .and_then(Value::as_array)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let default_branch_head = branches
        .iter()
        .find(|b| default_branch.is_some() && text(b, "name") == default_branch)
        .and_then(|b| text(b, "head"));
    let last_synced_at = branches.iter().filter_map(|b| millis(b, "syncTime")).max();
    vec![Record::from(LdCodeRefRepository {
        account: o.account.to_owned(),
        name,
        repo_type: text(v, "type"),
        default_branch,
        source_link: text(v, "sourceLink"),
        enabled: boolean(v, "enabled"),
        version: int(v, "version"),
        default_branch_head,
        last_synced_at,
        raw: v.clone(),
        collected_at: o.now,
    })]
}

#[cfg(test)]
mod tests;
