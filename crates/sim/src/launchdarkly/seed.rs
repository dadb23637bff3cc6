//! Seeds an [`Account`] from an [`LdAccountSpec`] and [`SimConfig::seed`]: exact counts,
//! every time in the past of the clock at seeding, the token owners among the members. The
//! audit log puts every `audit_tie_every`th entry in its predecessor's millisecond, so that
//! paging by time meets entries that share one.

use headroom_core::clock::Timestamp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::model::{
    Account, AuditEntry, Environment, Flag, FlagState, Member, Project, Repo, Segment, object_id,
};
use super::spec::LdAccountSpec;
use crate::config::{SimConfig, TokenOwner};

const TAGS: [&str; 5] = ["ops", "beta", "billing", "mobile", "web"];
const COLORS: [&str; 4] = ["417505", "F5A623", "1D6FA3", "D0021B"];
const FIRST: [&str; 6] = ["Ariel", "Sam", "Noor", "Kim", "Lee", "Robin"];
const LAST: [&str; 6] = ["Flores", "Okafor", "Berg", "Sato", "Novak", "Diaz"];
const ROLES: [&str; 3] = ["writer", "reader", "admin"];

/// A project's key: `default` first, then `proj-1`, `proj-2`, ….
pub(crate) fn project_key(i: usize) -> String {
    if i == 0 {
        "default".to_owned()
    } else {
        format!("proj-{i}")
    }
}

/// An environment's key: `production`, `test`, then `env-2`, ….
fn environment_key(i: usize) -> (String, String) {
    match i {
        0 => ("production".into(), "Production".into()),
        1 => ("test".into(), "Test".into()),
        n => (format!("env-{n}"), format!("Environment {n}")),
    }
}

fn tags(rng: &mut StdRng) -> Vec<String> {
    let n = rng.random_range(0..3usize);
    let mut t: Vec<String> = (0..n)
        .map(|_| TAGS[rng.random_range(0..TAGS.len())].to_owned())
        .collect();
    t.sort();
    t.dedup();
    t
}

/// A time between `from` and `to` (epoch ms).
fn between(rng: &mut StdRng, from: i64, to: i64) -> i64 {
    if to <= from {
        from
    } else {
        rng.random_range(from..to)
    }
}

/// Seeds the account.
pub(crate) fn seed(spec: &LdAccountSpec, config: &SimConfig, now: Timestamp) -> Account {
    let mut rng = StdRng::seed_from_u64(config.seed ^ 0x1a0d_a4c1);
    let now_ms = now.as_millisecond();
    let start = now_ms - i64::from(spec.history_days) * 86_400_000;
    let members = members(spec, config, &mut rng, start, now_ms);
    let projects = (0..spec.projects)
        .map(|p| project(spec, p, members.len(), &mut rng, start, now_ms))
        .collect::<Vec<_>>();
    let audit = audit(spec, &projects, members.len(), &mut rng, start, now_ms);
    let repos = (0..spec.code_ref_repositories)
        .map(|i| Repo {
            name: format!("{}-service-{i}", spec.name),
            default_branch: if i % 3 == 2 { "master" } else { "main" }.to_owned(),
            version: rng.random_range(1..20),
            enabled: i % 5 != 4,
        })
        .collect();
    Account {
        id: object_id(&format!("ld-account:{}", spec.name)),
        spec: spec.clone(),
        projects,
        members,
        audit,
        repos,
    }
}

/// The token owners (each user login once, in the order configured), then `spec.members`
/// others.
fn members(
    spec: &LdAccountSpec,
    config: &SimConfig,
    rng: &mut StdRng,
    start: i64,
    now: i64,
) -> Vec<Member> {
    let mut logins: Vec<String> = Vec::new();
    for t in &config.tokens {
        if let TokenOwner::User(login) = &t.owner
            && !logins.contains(login)
        {
            logins.push(login.clone());
        }
    }
    let others = (0..spec.members).map(|i| format!("member{i}"));
    logins
        .into_iter()
        .chain(others)
        .enumerate()
        .map(|(i, login)| {
            let created = between(rng, start, now - 60_000);
            Member {
                id: object_id(&format!("ld-member:{}:{login}", spec.name)),
                email: format!("{login}@example.com"),
                first_name: FIRST[i % FIRST.len()].to_owned(),
                last_name: LAST[(i / FIRST.len() + i) % LAST.len()].to_owned(),
                role: ROLES[i % ROLES.len()],
                created,
                last_seen: between(rng, created, now),
            }
        })
        .collect()
}

fn project(
    spec: &LdAccountSpec,
    p: usize,
    members: usize,
    rng: &mut StdRng,
    start: i64,
    now: i64,
) -> Project {
    let key = project_key(p);
    let environments: Vec<Environment> = (0..spec.environments_per_project)
        .map(|e| {
            let (ekey, name) = environment_key(e);
            let segments = (0..spec.segments_per_environment)
                .map(|s| {
                    let created = between(rng, start, now - 60_000);
                    Segment {
                        key: format!("segment-{s}"),
                        name: format!("Segment {s} of {name}"),
                        tags: tags(rng),
                        created,
                        modified: between(rng, created, now),
                        included: (0..rng.random_range(0..4usize))
                            .map(|u| format!("user-{s}-{u}"))
                            .collect(),
                        version: rng.random_range(1..8),
                    }
                })
                .collect();
            Environment {
                id: object_id(&format!("ld-env:{}:{key}:{ekey}", spec.name)),
                key: ekey,
                name,
                color: COLORS[e % COLORS.len()].to_owned(),
                critical: e == 0,
                segments,
            }
        })
        .collect();
    let flags = (0..spec.flags_per_project)
        .map(|f| flag(f, environments.len(), members, rng, start, now))
        .collect();
    Project {
        id: object_id(&format!("ld-project:{}:{key}", spec.name)),
        name: format!("Project {key}"),
        key,
        tags: tags(rng),
        environments,
        flags,
    }
}

fn flag(f: usize, envs: usize, members: usize, rng: &mut StdRng, start: i64, now: i64) -> Flag {
    let boolean = f % 4 != 3;
    let variations = if boolean { 2 } else { 3 };
    let created = between(rng, start, now - 60_000);
    let states = (0..envs)
        .map(|e| FlagState {
            on: rng.random_bool(0.6),
            last_modified: between(rng, created, now),
            version: rng.random_range(1..30),
            salt: object_id(&format!("salt:{f}:{e}"))[..16].to_owned(),
            targets: (0..rng.random_range(0..3usize))
                .map(|t| {
                    let keys = (0..rng.random_range(1..4usize))
                        .map(|k| format!("ctx-{f}-{t}-{k}"))
                        .collect();
                    (keys, t % variations)
                })
                .collect(),
            rules: (0..rng.random_range(0..3usize))
                .map(|r| {
                    let values = vec![format!("@{}.example.com", TAGS[r % TAGS.len()])];
                    ("email".to_owned(), values, r % variations)
                })
                .collect(),
            fallthrough: 0,
            off_variation: variations - 1,
        })
        .collect();
    Flag {
        key: format!("flag-{f}"),
        name: format!("Flag {f}"),
        description: format!("Seeded flag number {f}"),
        boolean,
        temporary: !f.is_multiple_of(3),
        tags: tags(rng),
        created,
        version: rng.random_range(1..40),
        maintainer: if members == 0 { 0 } else { f % members },
        states,
    }
}

/// The audit log, newest first.
fn audit(
    spec: &LdAccountSpec,
    projects: &[Project],
    members: usize,
    rng: &mut StdRng,
    start: i64,
    now: i64,
) -> Vec<AuditEntry> {
    let mut dates: Vec<i64> = (0..spec.audit_entries)
        .map(|_| between(rng, start, now - 1))
        .collect();
    dates.sort_unstable();
    dates.dedup();
    while dates.len() < spec.audit_entries {
        // Redraws of one millisecond are rare; fill the gap with fresh distinct times.
        let d = between(rng, start, now - 1);
        if let Err(at) = dates.binary_search(&d) {
            dates.insert(at, d);
        }
    }
    let tie = spec.audit_tie_every;
    for i in 1..dates.len() {
        if tie > 0 && i % tie == 0 {
            dates[i] = dates[i - 1];
        }
    }
    let mut entries: Vec<AuditEntry> = dates
        .iter()
        .enumerate()
        .map(|(i, &date)| audit_entry(spec, projects, members, i, date))
        .collect();
    entries.sort_by(|a, b| b.date.cmp(&a.date).then_with(|| b.id.cmp(&a.id)));
    entries
}

fn audit_entry(
    spec: &LdAccountSpec,
    projects: &[Project],
    members: usize,
    i: usize,
    date: i64,
) -> AuditEntry {
    let member = if members == 0 { 0 } else { i % members };
    let id = object_id(&format!("ld-audit:{}:{i}", spec.name));
    let Some(p) = projects.get(i % projects.len().max(1)) else {
        return AuditEntry {
            id,
            date,
            kind: "member",
            name: format!("member{}", i % members.max(1)),
            title_verb: "updated the member",
            action: "updateMemberRole",
            resource: format!("member/{i}"),
            member,
        };
    };
    match (
        p.flags.get(i % p.flags.len().max(1)),
        p.environments.first(),
    ) {
        (Some(f), Some(e)) => AuditEntry {
            id,
            date,
            kind: "flag",
            name: f.name.clone(),
            title_verb: if i.is_multiple_of(2) {
                "turned on the flag"
            } else {
                "turned off the flag"
            },
            action: "updateOn",
            resource: format!("proj/{}:env/{}:flag/{}", p.key, e.key, f.key),
            member,
        },
        _ => AuditEntry {
            id,
            date,
            kind: "project",
            name: p.name.clone(),
            title_verb: "updated the project",
            action: "updateName",
            resource: format!("proj/{}", p.key),
            member,
        },
    }
}
