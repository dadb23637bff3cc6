//! LaunchDarkly's representations of the seeded data (`Project`, `Environment`,
//! `FeatureFlag` with its per-environment `FeatureFlagConfig`, `UserSegment`, `Member`,
//! `AuditLogEntryListingRep`, `RepositoryRep`) and the offset paging every list shares:
//! `_links` with `self`, and `first`, `prev`, `next`, `last` only where those pages exist.

use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::{Map, Value, json};

use super::model::{
    Account, AuditEntry, Environment, Flag, FlagState, Member, Project, Repo, Segment,
};

/// A link object, as `_links` holds them.
pub(crate) fn link(href: &str) -> Value {
    json!({"href": href, "type": "application/json"})
}

fn encode(s: &str) -> String {
    utf8_percent_encode(s, NON_ALPHANUMERIC).to_string()
}

/// `path?k=v&…` with the kept parameters first, then `extra`.
pub(crate) fn href(path: &str, keep: &[(String, String)], extra: &[(&str, String)]) -> String {
    let params: Vec<String> = keep
        .iter()
        .map(|(k, v)| format!("{}={}", encode(k), encode(v)))
        .chain(extra.iter().map(|(k, v)| format!("{k}={}", encode(v))))
        .collect();
    if params.is_empty() {
        path.to_owned()
    } else {
        format!("{path}?{}", params.join("&"))
    }
}

/// One page of an offset-paged list: which items, and its `_links`.
#[derive(Debug)]
pub(crate) struct Page {
    pub(crate) range: std::ops::Range<usize>,
    pub(crate) links: Value,
}

/// The page of `total` items at `offset`, `limit` long; links keep the parameters in `keep`.
pub(crate) fn page(
    path: &str,
    keep: &[(String, String)],
    total: usize,
    limit: usize,
    offset: usize,
) -> Page {
    let limit = limit.max(1);
    let at = |o: usize| {
        link(&href(
            path,
            keep,
            &[("limit", limit.to_string()), ("offset", o.to_string())],
        ))
    };
    let mut links = Map::new();
    links.insert("self".into(), at(offset));
    if offset > 0 {
        links.insert("first".into(), at(0));
        links.insert("prev".into(), at(offset.saturating_sub(limit)));
    }
    if offset + limit < total {
        links.insert("next".into(), at(offset + limit));
        links.insert("last".into(), at((total - 1) / limit * limit));
    }
    Page {
        range: offset.min(total)..(offset + limit).min(total),
        links: Value::Object(links),
    }
}

pub(crate) fn environment(p: &Project, e: &Environment) -> Value {
    json!({
        "_links": {
            "self": link(&format!("/api/v2/projects/{}/environments/{}", p.key, e.key)),
            "analytics": link(&format!("/api/v2/projects/{}/environments/{}/analytics", p.key, e.key)),
        },
        "_id": e.id,
        "key": e.key,
        "name": e.name,
        "apiKey": format!("sdk-{}", &e.id[..16]),
        "mobileKey": format!("mob-{}", &e.id[8..24]),
        "color": e.color,
        "defaultTtl": 0,
        "secureMode": false,
        "defaultTrackEvents": false,
        "requireComments": e.critical,
        "confirmChanges": e.critical,
        "tags": [],
        "critical": e.critical,
    })
}

/// A project; with its environments (the first page of 20) when expanded.
pub(crate) fn project(p: &Project, expand_environments: bool) -> Value {
    let mut v = json!({
        "_links": {
            "self": link(&format!("/api/v2/projects/{}", p.key)),
            "environments": link(&format!("/api/v2/projects/{}/environments", p.key)),
        },
        "_id": p.id,
        "key": p.key,
        "includeInSnippetByDefault": false,
        "defaultClientSideAvailability": {"usingMobileKey": false, "usingEnvironmentId": false},
        "name": p.name,
        "tags": p.tags,
    });
    if expand_environments {
        let path = format!("/api/v2/projects/{}/environments", p.key);
        let pg = page(&path, &[], p.environments.len(), 20, 0);
        let items: Vec<Value> = p.environments[pg.range]
            .iter()
            .map(|e| environment(p, e))
            .collect();
        v["environments"] = json!({
            "_links": pg.links,
            "totalCount": p.environments.len(),
            "items": items,
        });
    }
    v
}

pub(crate) fn member_summary(m: &Member) -> Value {
    json!({
        "_links": {"self": link(&format!("/api/v2/members/{}", m.id))},
        "_id": m.id,
        "firstName": m.first_name,
        "lastName": m.last_name,
        "role": m.role,
        "email": m.email,
    })
}

pub(crate) fn member(m: &Member) -> Value {
    json!({
        "_links": {"self": link(&format!("/api/v2/members/{}", m.id))},
        "_id": m.id,
        "firstName": m.first_name,
        "lastName": m.last_name,
        "role": m.role,
        "email": m.email,
        "_pendingInvite": false,
        "_verified": true,
        "customRoles": [],
        "mfa": "disabled",
        "_lastSeen": m.last_seen,
        "creationDate": m.created,
        "version": 1,
    })
}

fn variations(f: &Flag) -> Value {
    let values: Vec<Value> = if f.boolean {
        vec![json!(true), json!(false)]
    } else {
        vec![json!("control"), json!("treatment-a"), json!("treatment-b")]
    };
    Value::Array(
        values
            .into_iter()
            .enumerate()
            .map(|(i, v)| json!({"_id": super::model::object_id(&format!("{}:{i}", f.key)), "value": v}))
            .collect(),
    )
}

fn summary(f: &Flag, s: &FlagState) -> Value {
    let n = if f.boolean { 2 } else { 3 };
    let mut vars = Map::new();
    for i in 0..n {
        vars.insert(
            i.to_string(),
            json!({
                "rules": s.rules.iter().filter(|r| r.2 == i).count(),
                "nullRules": 0,
                "targets": s.targets.iter().filter(|t| t.1 == i).map(|t| t.0.len()).sum::<usize>(),
                "contextTargets": 0,
                "isFallthrough": s.fallthrough == i,
                "isOff": s.off_variation == i,
            }),
        );
    }
    json!({"variations": vars, "prerequisites": 0})
}

/// A flag's configuration in one environment; targeting in full when `full`.
fn flag_config(p: &Project, f: &Flag, e: &Environment, s: &FlagState, full: bool) -> Value {
    let mut v = json!({
        "on": s.on,
        "archived": false,
        "salt": s.salt,
        "sel": s.salt.chars().rev().collect::<String>(),
        "lastModified": s.last_modified,
        "version": s.version,
        "_site": {"href": format!("/{}/{}/features/{}", p.key, e.key, f.key), "type": "text/html"},
        "_environmentName": e.name,
        "trackEvents": false,
        "trackEventsFallthrough": false,
        "_summary": summary(f, s),
    });
    if full {
        v["targets"] = s
            .targets
            .iter()
            .map(|(values, var)| json!({"values": values, "variation": var, "contextKind": "user"}))
            .collect();
        v["contextTargets"] = json!([]);
        v["rules"] = s
            .rules
            .iter()
            .enumerate()
            .map(|(i, (attr, values, var))| {
                json!({
                    "_id": super::model::object_id(&format!("{}:{}:rule{i}", f.key, e.key)),
                    "variation": var,
                    "clauses": [{
                        "_id": super::model::object_id(&format!("{}:{}:clause{i}", f.key, e.key)),
                        "attribute": attr,
                        "op": "endsWith",
                        "values": values,
                        "contextKind": "user",
                        "negate": false,
                    }],
                    "trackEvents": false,
                })
            })
            .collect();
        v["fallthrough"] = json!({"variation": s.fallthrough});
        v["offVariation"] = json!(s.off_variation);
        v["prerequisites"] = json!([]);
    }
    v
}

/// A flag with its configuration in the environments `envs` (indices into the project's).
pub(crate) fn flag(a: &Account, p: &Project, f: &Flag, envs: &[usize], full: bool) -> Value {
    let mut environments = Map::new();
    for &e in envs {
        if let (Some(env), Some(state)) = (p.environments.get(e), f.states.get(e)) {
            environments.insert(env.key.clone(), flag_config(p, f, env, state, full));
        }
    }
    let last = if f.boolean { 1 } else { 2 };
    let mut v = json!({
        "name": f.name,
        "kind": if f.boolean { "boolean" } else { "multivariate" },
        "description": f.description,
        "key": f.key,
        "_version": f.version,
        "creationDate": f.created,
        "includeInSnippet": false,
        "clientSideAvailability": {"usingMobileKey": false, "usingEnvironmentId": false},
        "variations": variations(f),
        "temporary": f.temporary,
        "tags": f.tags,
        "_links": {
            "self": link(&format!("/api/v2/flags/{}/{}", p.key, f.key)),
            "parent": link(&format!("/api/v2/flags/{}", p.key)),
        },
        "experiments": {"baselineIdx": 0, "items": []},
        "customProperties": {},
        "archived": false,
        "deprecated": false,
        "defaults": {"onVariation": 0, "offVariation": last},
        "environments": environments,
    });
    if let Some(m) = a.members.get(f.maintainer) {
        v["maintainerId"] = json!(m.id);
        v["_maintainer"] = member_summary(m);
    }
    v
}

pub(crate) fn segment(p: &Project, e: &Environment, s: &Segment) -> Value {
    let parent = format!("/api/v2/segments/{}/{}", p.key, e.key);
    json!({
        "name": s.name,
        "description": format!("Seeded segment {} of {}", s.key, p.key),
        "tags": s.tags,
        "creationDate": s.created,
        "lastModifiedDate": s.modified,
        "key": s.key,
        "included": s.included,
        "excluded": [],
        "includedContexts": [],
        "excludedContexts": [],
        "_links": {"self": link(&format!("{parent}/{}", s.key)), "parent": link(&parent)},
        "rules": [],
        "version": s.version,
        "deleted": false,
        "unbounded": false,
        "generation": 1,
    })
}

pub(crate) fn audit_entry(a: &Account, x: &AuditEntry) -> Value {
    let mut v = json!({
        "_links": {
            "self": link(&format!("/api/v2/auditlog/{}", x.id)),
            "parent": link("/api/v2/auditlog"),
        },
        "_id": x.id,
        "_accountId": a.id,
        "date": x.date,
        "accesses": [{"action": x.action, "resource": x.resource}],
        "kind": x.kind,
        "name": x.name,
        "description": format!("{} {}", x.title_verb, x.name),
        "shortDescription": x.title_verb,
        "titleVerb": x.title_verb,
        "target": {"name": x.name, "resources": [x.resource]},
    });
    if let Some(m) = a.members.get(x.member) {
        v["member"] = json!({
            "_links": {"self": link(&format!("/api/v2/members/{}", m.id)), "parent": link("/api/v2/members")},
            "_id": m.id,
            "email": m.email,
            "firstName": m.first_name,
            "lastName": m.last_name,
        });
        v["title"] = json!(format!(
            "[{} {}](mailto:{}) {} {}",
            m.first_name, m.last_name, m.email, x.title_verb, x.name
        ));
    }
    v
}

pub(crate) fn repo(a: &Account, r: &Repo) -> Value {
    let source = format!("https://github.com/{}/{}", a.spec.name, r.name);
    json!({
        "name": r.name,
        "sourceLink": source,
        "commitUrlTemplate": format!("{source}/commit/${{sha}}"),
        "hunkUrlTemplate": format!("{source}/blob/${{sha}}/${{filePath}}#L${{lineNumber}}"),
        "type": "github",
        "defaultBranch": r.default_branch,
        "enabled": r.enabled,
        "version": r.version,
        "_links": {"self": link(&format!("/api/v2/code-refs/repositories/{}", r.name))},
    })
}
