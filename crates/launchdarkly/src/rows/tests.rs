//! The rows' tests: fixtures shaped as LaunchDarkly's published description's examples, and
//! properties over arbitrary JSON.

use headroom_store::launchdarkly::LdRecord;
use proptest::prelude::*;
use serde_json::json;

use super::*;

fn origin() -> Origin<'static> {
    Origin {
        account: "1234a56b7c89d012345e678f",
        now: "2026-12-07T03:00:00Z".parse().expect("an instant"),
    }
}

fn ld(r: &Record) -> &LdRecord {
    match r {
        Record::Launchdarkly(r) => r,
        other => panic!("not a LaunchDarkly row: {other:?}"),
    }
}

fn at_ms(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(ms).expect("an instant")
}

/// The `FeatureFlag` example of the published description, its `environments` example
/// included (`FeatureFlagConfig`, with `_summary`).
fn openapi_flag() -> Value {
    json!({
        "name": "My Flag", "kind": "boolean", "key": "flag-key-123abc", "_version": 1,
        "creationDate": 1494437420312_i64, "description": "This flag controls the example widgets",
        "variations": [{"_id": "e432f62b-55f6-49dd-a02f-eb24acf39d05", "value": true},
                       {"_id": "a00bf58d-d252-476c-b915-15a74becacb4", "value": false}],
        "temporary": true, "tags": ["example-tag"],
        "_links": {"parent": {"href": "/api/v2/flags/my-project", "type": "application/json"}},
        "maintainerId": "569f183514f4432160000007", "maintainerTeamKey": "team-1",
        "_maintainer": {"_id": "569f183514f4432160000007", "email": "ariel@acme.com", "role": "admin"},
        "experiments": {"baselineIdx": 0, "items": []}, "customProperties": {},
        "archived": false, "deprecated": false,
        "environments": {"my-environment": {
            "_environmentName": "My Environment",
            "_site": {"href": "/default/my-environment/features/client-side-flag", "type": "text/html"},
            "_summary": {"prerequisites": 0, "variations": {
                "0": {"contextTargets": 1, "isFallthrough": true, "nullRules": 0, "rules": 0, "targets": 1},
                "1": {"isOff": true, "nullRules": 0, "rules": 0, "targets": 0}}},
            "archived": false,
            "contextTargets": [{"contextKind": "device", "values": ["device-key-123abc"], "variation": 0}],
            "fallthrough": {"variation": 0}, "lastModified": 1627071171347_i64, "offVariation": 1,
            "on": false, "prerequisites": [], "rules": [],
            "salt": "61eddeadbeef4da1facecafe3a60a397", "sel": "810edeadbeef4844facecafe438f2999492",
            "targets": [{"contextKind": "user", "values": ["user-key-123abc"], "variation": 0}],
            "trackEvents": false, "trackEventsFallthrough": false, "version": 1
        }}
    })
}

#[test]
fn a_flag_keeps_its_kind_tags_maintainer_and_per_environment_state() {
    let rows = flag_rows(&openapi_flag(), "my-project", origin());
    assert_eq!(rows.len(), 2, "the flag and its one environment");
    let LdRecord::Flag(flag) = ld(&rows[0]) else {
        panic!("a flag first: {rows:?}")
    };
    assert_eq!(flag.account, "1234a56b7c89d012345e678f");
    assert_eq!(
        (flag.project_key.as_str(), flag.key.as_str()),
        ("my-project", "flag-key-123abc")
    );
    assert_eq!(flag.kind.as_deref(), Some("boolean"));
    assert_eq!(flag.temporary, Some(true));
    assert_eq!(flag.tags, vec!["example-tag".to_owned()]);
    assert_eq!(flag.version, Some(1));
    assert_eq!(flag.created_at, Some(at_ms(1_494_437_420_312)));
    assert_eq!(
        flag.maintainer_id.as_deref(),
        Some("569f183514f4432160000007")
    );
    assert_eq!(flag.maintainer_team_key.as_deref(), Some("team-1"));
    assert_eq!((flag.archived, flag.deprecated), (Some(false), Some(false)));
    assert_eq!(flag.raw, openapi_flag(), "raw is what was sent");
    let LdRecord::FlagEnvironment(env) = ld(&rows[1]) else {
        panic!("then its environment: {rows:?}")
    };
    assert_eq!(env.flag_key, "flag-key-123abc");
    assert_eq!(env.environment_key, "my-environment");
    assert_eq!(env.environment_name.as_deref(), Some("My Environment"));
    assert_eq!(
        (env.is_on, env.archived, env.version),
        (Some(false), Some(false), Some(1))
    );
    assert_eq!(env.last_modified_at, Some(at_ms(1_627_071_171_347)));
    assert_eq!(env.rules_count, Some(0));
    assert_eq!(
        (env.targets_count, env.context_targets_count),
        (Some(1), Some(1))
    );
    assert_eq!(env.prerequisites_count, Some(0));
    assert_eq!(
        (env.fallthrough_variation, env.fallthrough_rollout),
        (Some(0), Some(false))
    );
    assert_eq!(env.off_variation, Some(1));
    let back: Record =
        serde_json::from_value(serde_json::to_value(&rows[1]).expect("JSON")).expect("reads back");
    assert_eq!(back, rows[1]);
    // The maintainer's e-mail address stays in raw: no typed field carries it.
    let mut typed = serde_json::to_value(&rows[0]).expect("JSON");
    typed["Flag"]["raw"] = Value::Null;
    assert!(!typed.to_string().contains("ariel@acme.com"), "{typed}");
}

#[test]
fn a_summarized_flag_environment_counts_its_targeting_from_the_summary() {
    let flag = json!({"key": "f", "environments": {"production": {
        "on": true, "version": 4, "offVariation": 1,
        "fallthrough": {"rollout": {"variations": [{"variation": 0, "weight": 60000}]}},
        "_summary": {"prerequisites": 2, "variations": {
            "0": {"rules": 2, "nullRules": 0, "targets": 3, "contextTargets": 0},
            "1": {"rules": 1, "nullRules": 0, "targets": 4, "contextTargets": 5}}}
    }}});
    let rows = flag_rows(&flag, "default", origin());
    let LdRecord::FlagEnvironment(env) = ld(&rows[1]) else {
        panic!("an environment: {rows:?}")
    };
    assert_eq!(env.rules_count, Some(3));
    assert_eq!(
        (env.targets_count, env.context_targets_count),
        (Some(7), Some(5))
    );
    assert_eq!(env.prerequisites_count, Some(2));
    assert_eq!(
        (env.fallthrough_variation, env.fallthrough_rollout),
        (None, Some(true))
    );
    assert_eq!(env.is_on, Some(true));
    // Lists sent (`summary=0`) are counted themselves: three rules, two keys in one target.
    let full = json!({"key": "f", "environments": {"production": {
        "rules": [{"clauses": []}, {"clauses": []}, {"clauses": []}],
        "targets": [{"values": ["a", "b"], "variation": 0}],
        "prerequisites": [{"key": "other", "variation": 0}],
        "_summary": {"prerequisites": 9, "variations": {"0": {"rules": 9, "targets": 9}}}
    }}});
    let rows = flag_rows(&full, "default", origin());
    let LdRecord::FlagEnvironment(env) = ld(&rows[1]) else {
        panic!("an environment: {rows:?}")
    };
    assert_eq!((env.rules_count, env.targets_count), (Some(3), Some(2)));
    assert_eq!(env.prerequisites_count, Some(1));
    assert_eq!(
        env.fallthrough_rollout, None,
        "no fallthrough sent, none guessed"
    );
}

/// The `Environment` example of the published description.
fn openapi_environment() -> Value {
    json!({
        "_links": {"self": {"href": "/api/v2/projects/my-project/environments/my-environment",
                            "type": "application/json"}},
        "_id": "57be1db38b75bf0772d11384", "key": "environment-key-123abc",
        "name": "My Environment", "apiKey": "sdk-xxx", "mobileKey": "mob-xxx",
        "color": "F5A623", "defaultTtl": 5, "secureMode": true, "defaultTrackEvents": false,
        "requireComments": true, "confirmChanges": true, "tags": ["ops"], "critical": true
    })
}

#[test]
fn an_environments_sdk_and_mobile_keys_never_reach_the_rows() {
    let project = json!({
        "_links": {"self": {"href": "/api/v2/projects/my-project", "type": "application/json"}},
        "_id": "57be1db38b75bf0772d11383", "key": "project-key-123abc",
        "includeInSnippetByDefault": true, "name": "My Project", "tags": ["ops"],
        "environments": {"totalCount": 1, "items": [openapi_environment()]}
    });
    let rows = project_rows(&project, origin());
    assert_eq!(rows.len(), 2, "the project and its expanded environment");
    let LdRecord::Project(p) = ld(&rows[0]) else {
        panic!("a project first: {rows:?}")
    };
    assert_eq!(
        (p.key.as_str(), p.id.as_deref()),
        ("project-key-123abc", Some("57be1db38b75bf0772d11383"))
    );
    assert_eq!(
        (p.name.as_deref(), p.tags.clone()),
        (Some("My Project"), vec!["ops".to_owned()])
    );
    let LdRecord::Environment(e) = ld(&rows[1]) else {
        panic!("then its environment: {rows:?}")
    };
    assert_eq!(e.project_key, "project-key-123abc");
    assert_eq!(
        (e.key.as_str(), e.color.as_deref()),
        ("environment-key-123abc", Some("F5A623"))
    );
    assert_eq!(
        (e.name.as_deref(), e.critical),
        (Some("My Environment"), Some(true))
    );
    assert_eq!(e.raw["secureMode"], true, "the rest of raw is kept");
    let direct = environment_rows(&openapi_environment(), "project-key-123abc", origin());
    assert_eq!(direct, rows[1..].to_vec());
    for row in rows.iter().chain(&direct) {
        let stored = serde_json::to_string(row).expect("JSON");
        assert!(
            !stored.contains("sdk-xxx") && !stored.contains("mob-xxx"),
            "{stored}"
        );
    }
}

#[test]
fn a_member_is_kept_by_id_and_its_email_never_leaves_raw() {
    let member = json!({
        "_links": {}, "_id": "507f1f77bcf86cd799439011", "firstName": "Ariel",
        "lastName": "Flores", "role": "reader", "email": "ariel@acme.com",
        "_pendingInvite": false, "_verified": true, "customRoles": ["devOps", "backend-devs"],
        "mfa": "enabled", "_lastSeen": 1608260796147_i64, "creationDate": 1628001602644_i64
    });
    let rows = member_rows(&member, origin());
    let LdRecord::Member(m) = ld(&rows[0]) else {
        panic!("a member: {rows:?}")
    };
    assert_eq!(m.id, "507f1f77bcf86cd799439011");
    assert_eq!(
        (m.first_name.as_deref(), m.last_name.as_deref()),
        (Some("Ariel"), Some("Flores"))
    );
    assert_eq!(m.role.as_deref(), Some("reader"));
    assert_eq!(
        m.custom_roles,
        vec!["devOps".to_owned(), "backend-devs".to_owned()]
    );
    assert_eq!(
        (m.pending_invite, m.mfa.as_deref()),
        (Some(false), Some("enabled"))
    );
    assert_eq!(m.last_seen_at, Some(at_ms(1_608_260_796_147)));
    assert_eq!(m.created_at, Some(at_ms(1_628_001_602_644)));
    let mut typed = serde_json::to_value(&rows[0]).expect("JSON");
    typed["Member"]["raw"] = Value::Null;
    assert!(!typed.to_string().contains("ariel@acme.com"), "{typed}");
}

#[test]
fn an_audit_entry_keeps_its_date_member_target_and_accesses() {
    let entry = json!({
        "_links": {}, "_id": "1234a56b7c89d012345e678f", "_accountId": "1234a56b7c89d012345e678f",
        "date": 1654104600000_i64,
        "accesses": [{"action": "updateOn", "resource": "proj/example-project:env/production:flag/example-flag"}],
        "kind": "flag", "name": "Example feature flag",
        "description": "Example, turning on the flag for testing",
        "shortDescription": "Example, turning on the flag", "comment": "This is an automated test",
        "member": {"_links": {}, "_id": "507f1f77bcf86cd799439011", "email": "ariel@acme.com",
                   "firstName": "Ariel", "lastName": "Flores"},
        "titleVerb": "turned on the flag",
        "target": {"_links": {}, "name": "Example flag name",
                   "resources": ["proj/example-project:env/production:flag/example-flag"]}
    });
    let rows = audit_rows(&entry, origin());
    let LdRecord::AuditEntry(a) = ld(&rows[0]) else {
        panic!("an entry: {rows:?}")
    };
    assert_eq!(a.id, "1234a56b7c89d012345e678f");
    assert_eq!(a.date, at_ms(1_654_104_600_000));
    assert_eq!(
        (a.kind.as_deref(), a.name.as_deref()),
        (Some("flag"), Some("Example feature flag"))
    );
    assert_eq!(
        a.short_description.as_deref(),
        Some("Example, turning on the flag")
    );
    assert_eq!(a.comment.as_deref(), Some("This is an automated test"));
    assert_eq!(a.member_id.as_deref(), Some("507f1f77bcf86cd799439011"));
    assert_eq!(a.target_name.as_deref(), Some("Example flag name"));
    assert_eq!(
        a.target_resources,
        vec!["proj/example-project:env/production:flag/example-flag".to_owned()]
    );
    assert_eq!(a.accesses, entry["accesses"]);
    let mut typed = serde_json::to_value(&rows[0]).expect("JSON");
    typed["AuditEntry"]["raw"] = Value::Null;
    assert!(!typed.to_string().contains("ariel@acme.com"), "{typed}");
}

#[test]
fn a_code_ref_repository_keeps_its_default_branch_head_and_latest_scan() {
    let repo = json!({
        "name": "LaunchDarkly-Docs", "sourceLink": "https://github.com/launchdarkly/LaunchDarkly-Docs",
        "type": "github", "defaultBranch": "main", "enabled": true, "version": 3, "_links": {},
        "branches": [
            {"name": "feature", "head": "b2", "syncTime": 1636558999999_i64, "_links": {}},
            {"name": "main", "head": "a94a8fe5ccb19ba61c4c0873d391e987982fbbd3",
             "updateSequenceId": 25, "syncTime": 1636558831870_i64, "_links": {}}
        ]
    });
    let rows = code_ref_rows(&repo, origin());
    let LdRecord::CodeRefRepository(r) = ld(&rows[0]) else {
        panic!("a repository: {rows:?}")
    };
    assert_eq!(
        (r.name.as_str(), r.repo_type.as_deref()),
        ("LaunchDarkly-Docs", Some("github"))
    );
    assert_eq!(
        (r.default_branch.as_deref(), r.enabled, r.version),
        (Some("main"), Some(true), Some(3))
    );
    assert_eq!(
        r.source_link.as_deref(),
        Some("https://github.com/launchdarkly/LaunchDarkly-Docs")
    );
    assert_eq!(
        r.default_branch_head.as_deref(),
        Some("a94a8fe5ccb19ba61c4c0873d391e987982fbbd3")
    );
    assert_eq!(r.last_synced_at, Some(at_ms(1_636_558_999_999)));
    let bare = code_ref_rows(&json!({"name": "r", "defaultBranch": "main"}), origin());
    let LdRecord::CodeRefRepository(r) = ld(&bare[0]) else {
        panic!("a repository: {bare:?}")
    };
    assert_eq!(
        (r.default_branch_head.clone(), r.last_synced_at),
        (None, None)
    );
}

#[test]
fn a_segment_keeps_its_dates_and_whether_it_is_unbounded() {
    let segment = json!({
        "name": "Example segment", "description": "Bundle our sample customers together",
        "tags": ["testing"], "creationDate": 1654104600000_i64, "lastModifiedDate": 1654104700000_i64,
        "key": "segment-key-123abc", "included": ["user-key-123abc"], "excluded": [],
        "_links": {}, "rules": [], "version": 1, "deleted": false, "unbounded": false, "generation": 1
    });
    let rows = segment_rows(&segment, "my-project", "production", origin());
    let LdRecord::Segment(s) = ld(&rows[0]) else {
        panic!("a segment: {rows:?}")
    };
    assert_eq!(
        (s.project_key.as_str(), s.environment_key.as_str()),
        ("my-project", "production")
    );
    assert_eq!(
        (s.key.as_str(), s.name.as_deref()),
        ("segment-key-123abc", Some("Example segment"))
    );
    assert_eq!(
        (s.unbounded, s.deleted, s.version),
        (Some(false), Some(false), Some(1))
    );
    assert_eq!(s.created_at, Some(at_ms(1_654_104_600_000)));
    assert_eq!(s.last_modified_at, Some(at_ms(1_654_104_700_000)));
    assert_eq!(s.tags, vec!["testing".to_owned()]);
}

#[test]
fn an_object_without_its_key_or_id_is_skipped_not_stored_half() {
    let o = origin();
    assert!(
        project_rows(
            &json!({"name": "P", "environments": {"items": [openapi_environment()]}}),
            o
        )
        .is_empty()
    );
    assert!(environment_rows(&json!({"name": "E", "key": ""}), "p", o).is_empty());
    assert!(
        flag_rows(
            &json!({"name": "F", "environments": {"production": {"on": true}}}),
            "p",
            o
        )
        .is_empty()
    );
    assert!(segment_rows(&json!({"name": "S"}), "p", "e", o).is_empty());
    assert!(member_rows(&json!({"email": "a@b.c", "role": "admin"}), o).is_empty());
    assert!(
        audit_rows(&json!({"_id": "e1"}), o).is_empty(),
        "an entry needs its date"
    );
    assert!(audit_rows(&json!({"date": 1654104600000_i64}), o).is_empty());
    assert!(code_ref_rows(&json!({"type": "github"}), o).is_empty());
    // An environment of a flag that is not an object is not a row.
    let rows = flag_rows(
        &json!({"key": "f", "environments": {"production": 7, "": {}}}),
        "p",
        o,
    );
    assert_eq!(rows.len(), 1, "{rows:?}");
    assert_eq!(items(&json!({"items": [1, 2]})).len(), 2);
    assert!(items(&json!({"totalCount": 0})).is_empty());
}

/// Any JSON value, a few levels deep, with the field names the rows read among its keys.
fn any_json() -> impl Strategy<Value = Value> {
    let names = prop_oneof![
        Just("key".to_owned()),
        Just("_id".to_owned()),
        Just("date".to_owned()),
        Just("environments".to_owned()),
        Just("items".to_owned()),
        Just("tags".to_owned()),
        Just("branches".to_owned()),
        Just("target".to_owned()),
        Just("_summary".to_owned()),
        Just("variations".to_owned()),
        Just("rules".to_owned()),
        Just("targets".to_owned()),
        Just("fallthrough".to_owned()),
        Just("creationDate".to_owned()),
        "[a-z_]{0,6}",
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        "[a-z0-9-]{0,8}".prop_map(Value::from),
    ];
    leaf.prop_recursive(4, 48, 6, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((names.clone(), inner), 0..6)
                .prop_map(|kv| Value::Object(kv.into_iter().collect())),
        ]
    })
}

proptest! {
    /// Whatever LaunchDarkly sends, every row function answers rows or none: never a panic.
    #[test]
    fn arbitrary_json_never_panics_a_row_function(v in any_json()) {
        let o = origin();
        let _ = items(&v);
        let _ = project_rows(&v, o);
        let _ = environment_rows(&v, "p", o);
        let _ = flag_rows(&v, "p", o);
        let _ = segment_rows(&v, "p", "e", o);
        let _ = member_rows(&v, o);
        let _ = audit_rows(&v, o);
        let _ = code_ref_rows(&v, o);
    }

    /// A well-formed flag's fields come back as sent, one row per environment.
    #[test]
    fn a_well_formed_flag_round_trips_its_fields(
        key in "[a-z][a-z0-9-]{0,20}",
        name in ".{0,20}",
        tags in prop::collection::vec("[a-z]{1,8}", 0..4),
        created in 0_i64..4_102_444_800_000,
        temporary in any::<bool>(),
        envs in prop::collection::btree_map("[a-z]{1,8}", (any::<bool>(), 0_i64..1000), 0..4),
    ) {
        let environments: serde_json::Map<String, Value> = envs
            .iter()
            .map(|(k, (on, version))| (k.clone(), json!({"on": on, "version": version})))
            .collect();
        let v = json!({"key": key, "name": name, "kind": "multivariate", "tags": tags,
                       "creationDate": created, "temporary": temporary,
                       "environments": environments});
        let rows = flag_rows(&v, "p", origin());
        prop_assert_eq!(rows.len(), 1 + envs.len());
        let LdRecord::Flag(flag) = ld(&rows[0]) else { panic!("a flag first") };
        prop_assert_eq!(&flag.key, &key);
        prop_assert_eq!(flag.name.as_deref(), Some(name.as_str()));
        prop_assert_eq!(&flag.tags, &tags);
        prop_assert_eq!(flag.created_at, Some(at_ms(created)));
        prop_assert_eq!(flag.temporary, Some(temporary));
        for row in &rows[1..] {
            let LdRecord::FlagEnvironment(env) = ld(row) else { panic!("an environment") };
            let (on, version) = envs[&env.environment_key];
            prop_assert_eq!((env.is_on, env.version), (Some(on), Some(version)));
            prop_assert_eq!(&env.flag_key, &key);
        }
    }

    /// A well-formed audit entry's fields come back as sent.
    #[test]
    fn a_well_formed_audit_entry_round_trips_its_fields(
        id in "[0-9a-f]{24}",
        date in 0_i64..4_102_444_800_000,
        kind in "[a-z]{1,10}",
        member in "[0-9a-f]{24}",
        resources in prop::collection::vec("proj/[a-z]{1,6}:env/[a-z]{1,6}", 0..3),
    ) {
        let v = json!({"_id": id, "date": date, "kind": kind, "member": {"_id": member},
                       "target": {"resources": resources}, "accesses": []});
        let rows = audit_rows(&v, origin());
        let LdRecord::AuditEntry(a) = ld(&rows[0]) else { panic!("an entry") };
        prop_assert_eq!(&a.id, &id);
        prop_assert_eq!(a.date, at_ms(date));
        prop_assert_eq!(a.kind.as_deref(), Some(kind.as_str()));
        prop_assert_eq!(a.member_id.as_deref(), Some(member.as_str()));
        prop_assert_eq!(&a.target_resources, &resources);
        prop_assert_eq!(&a.raw, &v);
    }
}
