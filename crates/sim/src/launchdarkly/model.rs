//! The seeded account's data, as the endpoints read it: projects with their environments,
//! flags (with one state per environment of their project) and segments, the members, the
//! audit log (newest first) and the code-reference repositories. Times are epoch
//! milliseconds, as LaunchDarkly writes them.

use sha2::Digest;

use super::spec::LdAccountSpec;

/// A 24-hex-digit id, as LaunchDarkly's object ids look, derived from `what`.
pub(crate) fn object_id(what: &str) -> String {
    let d = sha2::Sha256::digest(what.as_bytes());
    d.iter().take(12).map(|b| format!("{b:02x}")).collect()
}

/// The seeded account.
#[derive(Debug, Clone)]
pub(crate) struct Account {
    pub(crate) spec: LdAccountSpec,
    /// The account's id (`accountId` of every token's caller identity).
    pub(crate) id: String,
    pub(crate) projects: Vec<Project>,
    pub(crate) members: Vec<Member>,
    /// Newest first; ties of one millisecond ordered by id, descending.
    pub(crate) audit: Vec<AuditEntry>,
    pub(crate) repos: Vec<Repo>,
}

#[derive(Debug, Clone)]
pub(crate) struct Project {
    pub(crate) id: String,
    pub(crate) key: String,
    pub(crate) name: String,
    pub(crate) tags: Vec<String>,
    pub(crate) environments: Vec<Environment>,
    pub(crate) flags: Vec<Flag>,
}

#[derive(Debug, Clone)]
pub(crate) struct Environment {
    pub(crate) id: String,
    pub(crate) key: String,
    pub(crate) name: String,
    pub(crate) color: String,
    pub(crate) critical: bool,
    pub(crate) segments: Vec<Segment>,
}

#[derive(Debug, Clone)]
pub(crate) struct Flag {
    pub(crate) key: String,
    pub(crate) name: String,
    pub(crate) description: String,
    /// Two variations (`true`/`false`) when boolean, else three strings.
    pub(crate) boolean: bool,
    pub(crate) temporary: bool,
    pub(crate) tags: Vec<String>,
    pub(crate) created: i64,
    pub(crate) version: u64,
    /// An index into the account's members.
    pub(crate) maintainer: usize,
    /// One per environment of the project, in the project's order.
    pub(crate) states: Vec<FlagState>,
}

/// A flag's configuration in one environment.
#[derive(Debug, Clone)]
pub(crate) struct FlagState {
    pub(crate) on: bool,
    pub(crate) last_modified: i64,
    pub(crate) version: u64,
    pub(crate) salt: String,
    /// Individual targets: context keys served one variation.
    pub(crate) targets: Vec<(Vec<String>, usize)>,
    /// Rules: (attribute, values, variation).
    pub(crate) rules: Vec<(String, Vec<String>, usize)>,
    pub(crate) fallthrough: usize,
    pub(crate) off_variation: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Segment {
    pub(crate) key: String,
    pub(crate) name: String,
    pub(crate) tags: Vec<String>,
    pub(crate) created: i64,
    pub(crate) modified: i64,
    pub(crate) included: Vec<String>,
    pub(crate) version: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Member {
    pub(crate) id: String,
    pub(crate) email: String,
    pub(crate) first_name: String,
    pub(crate) last_name: String,
    pub(crate) role: &'static str,
    pub(crate) created: i64,
    pub(crate) last_seen: i64,
}

#[derive(Debug, Clone)]
pub(crate) struct AuditEntry {
    pub(crate) id: String,
    pub(crate) date: i64,
    /// `flag`, `segment`, `project`, `environment` or `member`.
    pub(crate) kind: &'static str,
    pub(crate) name: String,
    pub(crate) title_verb: &'static str,
    pub(crate) action: &'static str,
    /// The resource specifier it acted on (`proj/p:env/e:flag/f`).
    pub(crate) resource: String,
    /// An index into the account's members.
    pub(crate) member: usize,
}

#[derive(Debug, Clone)]
pub(crate) struct Repo {
    pub(crate) name: String,
    pub(crate) default_branch: String,
    pub(crate) version: u64,
    pub(crate) enabled: bool,
}

impl Account {
    /// The project with this key.
    pub(crate) fn project(&self, key: &str) -> Option<&Project> {
        self.projects.iter().find(|p| p.key == key)
    }

    /// The member whose e-mail is this, case-insensitively.
    pub(crate) fn member_by_email(&self, email: &str) -> Option<usize> {
        self.members
            .iter()
            .position(|m| m.email.eq_ignore_ascii_case(email))
    }
}

impl Project {
    /// The environment with this key.
    pub(crate) fn environment(&self, key: &str) -> Option<&Environment> {
        self.environments.iter().find(|e| e.key == key)
    }
}
