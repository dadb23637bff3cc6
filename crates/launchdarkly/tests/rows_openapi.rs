//! The rows read LaunchDarkly's objects by the names its published OpenAPI description gives
//! them (`../shared/oracles/launchdarkly/ld-openapi.json`): every field a row function reads is
//! a property of the schema the endpoint answers with, and an object assembled from the
//! description's own examples becomes a row with those values. Absent the oracle, the test
//! reports a skip with the reason (a failure under CI).

#![allow(clippy::expect_used)]

use headroom_launchdarkly::rows::{self, Origin};
use headroom_store::Record;
use headroom_store::launchdarkly::LdRecord;
use serde_json::{Map, Value, json};

const ORACLE: &str = "launchdarkly/ld-openapi.json";

/// Each schema, and the properties of it that `rows` reads.
const READ: &[(&str, &[&str])] = &[
    ("Projects", &["items"]),
    ("Project", &["key", "_id", "name", "tags", "environments"]),
    ("Environments", &["items"]),
    (
        "Environment",
        &[
            "key",
            "_id",
            "name",
            "color",
            "tags",
            "critical",
            "apiKey",
            "mobileKey",
        ],
    ),
    ("FeatureFlags", &["items"]),
    (
        "FeatureFlag",
        &[
            "key",
            "name",
            "description",
            "kind",
            "temporary",
            "tags",
            "_version",
            "creationDate",
            "maintainerId",
            "maintainerTeamKey",
            "archived",
            "archivedDate",
            "deprecated",
            "deprecatedDate",
            "environments",
        ],
    ),
    (
        "FeatureFlagConfig",
        &[
            "_environmentName",
            "on",
            "archived",
            "version",
            "lastModified",
            "rules",
            "targets",
            "contextTargets",
            "prerequisites",
            "fallthrough",
            "offVariation",
            "_summary",
        ],
    ),
    ("FlagSummary", &["variations", "prerequisites"]),
    ("VariationSummary", &["rules", "targets", "contextTargets"]),
    ("Target", &["values"]),
    ("VariationOrRolloutRep", &["variation", "rollout"]),
    ("UserSegments", &["items"]),
    (
        "UserSegment",
        &[
            "key",
            "name",
            "description",
            "tags",
            "unbounded",
            "version",
            "deleted",
            "creationDate",
            "lastModifiedDate",
        ],
    ),
    ("Members", &["items"]),
    (
        "Member",
        &[
            "_id",
            "role",
            "firstName",
            "lastName",
            "customRoles",
            "_pendingInvite",
            "mfa",
            "creationDate",
            "_lastSeen",
        ],
    ),
    ("AuditLogEntryListingRepCollection", &["items"]),
    (
        "AuditLogEntryListingRep",
        &[
            "_id",
            "date",
            "kind",
            "name",
            "description",
            "shortDescription",
            "comment",
            "member",
            "target",
            "accesses",
        ],
    ),
    ("MemberDataRep", &["_id"]),
    ("TargetResourceRep", &["name", "resources"]),
    ("RepositoryCollectionRep", &["items"]),
    (
        "RepositoryRep",
        &[
            "name",
            "type",
            "defaultBranch",
            "sourceLink",
            "enabled",
            "version",
            "branches",
        ],
    ),
    ("BranchRep", &["name", "head", "syncTime"]),
];

fn oracle(test: &str) -> Option<Value> {
    let text = headroom_testkit::oracles::read(test, ORACLE)?;
    Some(serde_json::from_str(&text).expect("the description is JSON"))
}

fn schema<'a>(spec: &'a Value, name: &str) -> &'a Value {
    spec.pointer(&format!("/components/schemas/{name}"))
        .unwrap_or_else(|| panic!("the description has no schema {name}"))
}

#[test]
fn every_field_the_rows_read_is_named_so_in_the_published_description() {
    let Some(spec) = oracle("every_field_the_rows_read_is_named_so_in_the_published_description")
    else {
        return;
    };
    let mut missing = Vec::new();
    for (name, fields) in READ {
        let properties = schema(&spec, name)["properties"]
            .as_object()
            .unwrap_or_else(|| panic!("{name} has no properties"));
        for field in *fields {
            if !properties.contains_key(*field) {
                missing.push(format!("{name}.{field}"));
            }
        }
    }
    assert!(missing.is_empty(), "not in the description: {missing:?}");
    // The summary's variations are a map of `VariationSummary`, as the rows sum them.
    assert_eq!(
        schema(&spec, "AllVariationsSummary")["additionalProperties"]["$ref"],
        "#/components/schemas/VariationSummary"
    );
    // `Environment.apiKey` is the SDK key: the rows must leave it out, so it must be its name.
    let api_key = &schema(&spec, "Environment")["properties"]["apiKey"]["description"];
    assert!(
        api_key.as_str().is_some_and(|d| d.contains("SDK key")),
        "{api_key}"
    );
}

/// An object of `name` made of its properties' examples (those that have one).
fn example(spec: &Value, name: &str) -> Value {
    let mut out = Map::new();
    if let Some(properties) = schema(spec, name)["properties"].as_object() {
        for (field, p) in properties {
            if let Some(e) = p.get("example") {
                out.insert(field.clone(), e.clone());
            }
        }
    }
    Value::Object(out)
}

fn origin() -> Origin<'static> {
    Origin {
        account: "1234a56b7c89d012345e678f",
        now: "2026-12-07T03:00:00Z".parse().expect("an instant"),
    }
}

fn only(rows: &[Record]) -> &LdRecord {
    match rows {
        [Record::Launchdarkly(r), ..] => r,
        other => panic!("no LaunchDarkly row: {other:?}"),
    }
}

#[test]
fn objects_made_of_the_descriptions_examples_become_rows_with_their_values() {
    let Some(spec) =
        oracle("objects_made_of_the_descriptions_examples_become_rows_with_their_values")
    else {
        return;
    };
    let o = origin();
    let ms = |v: &Value| -> i64 {
        match v {
            Value::String(s) => s.parse().expect("digits"),
            other => other.as_i64().expect("a number"),
        }
    };

    let flag = example(&spec, "FeatureFlag");
    let rows = rows::flag_rows(&flag, "my-project", o);
    let LdRecord::Flag(f) = only(&rows) else {
        panic!("a flag: {rows:?}")
    };
    assert_eq!(Some(f.key.as_str()), flag["key"].as_str());
    assert_eq!(f.kind.as_deref(), flag["kind"].as_str());
    assert_eq!(f.maintainer_id.as_deref(), flag["maintainerId"].as_str());
    assert_eq!(
        f.created_at.map(|t| t.as_millisecond()),
        Some(ms(&flag["creationDate"]))
    );
    let environments = flag["environments"].as_object().expect("an example map");
    assert_eq!(rows.len(), 1 + environments.len());
    let Some(Record::Launchdarkly(LdRecord::FlagEnvironment(e))) = rows.get(1) else {
        panic!("an environment: {rows:?}")
    };
    let config = &environments[&e.environment_key];
    assert_eq!(e.is_on, config["on"].as_bool());
    assert_eq!(e.off_variation, config["offVariation"].as_i64());
    assert_eq!(
        e.last_modified_at.map(|t| t.as_millisecond()),
        config["lastModified"].as_i64()
    );

    let env = example(&spec, "Environment");
    let rows = rows::environment_rows(&env, "my-project", o);
    let LdRecord::Environment(e) = only(&rows) else {
        panic!("an environment: {rows:?}")
    };
    assert_eq!(e.color.as_deref(), env["color"].as_str());
    assert!(e.raw.get("apiKey").is_none() && e.raw.get("mobileKey").is_none());

    let project = example(&spec, "Project");
    let rows = rows::project_rows(&project, o);
    let LdRecord::Project(p) = only(&rows) else {
        panic!("a project: {rows:?}")
    };
    assert_eq!(p.id.as_deref(), project["_id"].as_str());

    let segment = example(&spec, "UserSegment");
    let rows = rows::segment_rows(&segment, "my-project", "production", o);
    let LdRecord::Segment(s) = only(&rows) else {
        panic!("a segment: {rows:?}")
    };
    assert_eq!(
        s.last_modified_at.map(|t| t.as_millisecond()),
        Some(ms(&segment["lastModifiedDate"]))
    );

    let member = example(&spec, "Member");
    let rows = rows::member_rows(&member, o);
    let LdRecord::Member(m) = only(&rows) else {
        panic!("a member: {rows:?}")
    };
    assert_eq!(m.first_name.as_deref(), member["firstName"].as_str());
    assert_eq!(
        m.last_seen_at.map(|t| t.as_millisecond()),
        Some(ms(&member["_lastSeen"]))
    );

    let mut entry = example(&spec, "AuditLogEntryListingRep");
    entry["member"] = example(&spec, "MemberDataRep");
    entry["target"] = example(&spec, "TargetResourceRep");
    let rows = rows::audit_rows(&entry, o);
    let LdRecord::AuditEntry(a) = only(&rows) else {
        panic!("an entry: {rows:?}")
    };
    assert_eq!(a.date.as_millisecond(), ms(&entry["date"]));
    assert_eq!(a.member_id.as_deref(), entry["member"]["_id"].as_str());
    assert_eq!(json!(a.target_resources), entry["target"]["resources"]);

    let mut repo = example(&spec, "RepositoryRep");
    repo["branches"] = json!([example(&spec, "BranchRep")]);
    let rows = rows::code_ref_rows(&repo, o);
    let LdRecord::CodeRefRepository(r) = only(&rows) else {
        panic!("a repository: {rows:?}")
    };
    assert_eq!(r.repo_type.as_deref(), repo["type"].as_str());
    assert_eq!(
        r.default_branch_head.as_deref(),
        repo["branches"][0]["head"].as_str()
    );
    assert_eq!(
        r.last_synced_at.map(|t| t.as_millisecond()),
        Some(ms(&repo["branches"][0]["syncTime"]))
    );
}
