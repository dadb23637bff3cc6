//! `headroom sync plan launchdarkly`: what an account sync will ask, in requests per stage
//! and route family, estimated before it starts.
//!
//! The probe ([`probe::probe`]) reads what LaunchDarkly counts cheaply, every request in
//! `launchdarkly_sync_plan`: the projects with their embedded environments (paged as stage
//! `projects` pages them, so each project's `totalCount` of environments is known), the
//! `totalCount` of a `limit=1` page of flags for up to [`FLAG_SAMPLE`] projects, of segments
//! for up to [`SEGMENT_SAMPLE`] environments, and of members. The audit log has no
//! `totalCount`, and its pages are not a function of its size (a page ends early before a
//! millisecond it would split, and the next page asks that millisecond again): the probe reads
//! its first [`AUDIT_PROBE_PAGES`] pages exactly as stage `audit_log` reads them, from the
//! same starting point (the whole log, or from the newest entry stored with
//! [`probe::probe_from_store`]). When the log ends within them, the probe has counted the
//! stage's pages exactly; when it does not, the estimate says "at least" one page more
//! ([`LdPlan::audit_exact`] is false, and [`LdPlan::notes`] says so in words).
//!
//! [`estimate`] turns the counts into each stage's requests with the stages' own arithmetic:
//! identity 1; projects [`PROJECTS_PAGE`] a page (at least one page); a project's environments
//! beyond its embedded page [`ENVIRONMENTS_PAGE`] a page; flags [`FLAGS_PAGE`] a page once per
//! group of at most [`FLAG_ENVIRONMENTS`] of the project's environments (one group for a
//! project without any); segments [`SEGMENTS_PAGE`] a page per environment; members
//! [`MEMBERS_PAGE`] a page; code references one request. Every list is asked at least once. It
//! is the estimate of a run that re-reads the lists: a first run, a `full` one, or one whose
//! audit log shows a change; otherwise a run asks only the identity and the audit log. Sampled
//! means are exact where the data is uniform; each family's total is rounded up once.

mod probe;
pub use probe::{PlanError, probe, probe_from_store, sample_indices};

use headroom_core::{RouteFamily, route};

use super::{audit, lists, names, projects};

/// Audit entries a page, as stage `audit_log` asks (the log's most).
pub const AUDIT_PAGE: u32 = audit::AUDIT_PAGE;
/// Projects a page, as stage `projects` asks.
pub const PROJECTS_PAGE: u32 = projects::PROJECTS_PAGE;
/// Environments a page beyond the embedded ones, as stage `projects` asks.
pub const ENVIRONMENTS_PAGE: u32 = projects::ENVIRONMENTS_PAGE;
/// Flags a page, as stage `flags` asks.
pub const FLAGS_PAGE: u32 = lists::FLAGS_PAGE;
/// Environments one flag request names, at most, as stage `flags` groups them.
pub const FLAG_ENVIRONMENTS: usize = lists::FLAG_ENVIRONMENTS;
/// Segments a page, as stage `segments` asks.
pub const SEGMENTS_PAGE: u32 = lists::SEGMENTS_PAGE;
/// Members a page, as stage `members` asks.
pub const MEMBERS_PAGE: u32 = lists::MEMBERS_PAGE;

/// Projects whose flags the probe counts (every selected project when there are no more).
pub const FLAG_SAMPLE: usize = 10;
/// Environments whose segments the probe counts (every one when there are no more).
pub const SEGMENT_SAMPLE: usize = 10;
/// Audit log pages the probe reads at most.
pub const AUDIT_PROBE_PAGES: u64 = 5;

/// One selected project, as the probe saw it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProjectProbe {
    /// Its key.
    pub key: String,
    /// Its environments (the embedded page's `totalCount`).
    pub environments: u64,
    /// Of those, the ones embedded in its project (stage `projects` asks for the rest).
    pub embedded_environments: u64,
    /// Its flags (`totalCount`), when the probe counted them.
    pub flags: Option<u64>,
}

/// What the probe measured of the account and the selection.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LdProbe {
    /// Projects the token lists: stage `projects` pages through them all.
    pub visible_projects: u64,
    /// The selected projects among them.
    pub projects: Vec<ProjectProbe>,
    /// Segments (`totalCount`) of each sampled environment.
    pub segment_samples: Vec<u64>,
    /// Members (`totalCount`).
    pub members: u64,
    /// The audit log's `after` the probe read from (as the stage would), if any.
    pub audit_after: Option<i64>,
    /// Audit entries from that point, when the probe read the log to its end.
    pub audit_entries: Option<u64>,
    /// Audit pages the probe read: the stage's pages when `audit_entries` is known, fewer
    /// than them otherwise.
    pub audit_pages: u64,
    /// Requests the probe itself sent.
    pub requests: u64,
}

impl LdProbe {
    /// Environments of the selected projects (stage `segments`' scopes).
    pub fn environments(&self) -> u64 {
        self.projects.iter().map(|p| p.environments).sum()
    }

    /// Flags of the projects whose flags were counted.
    pub fn counted_flags(&self) -> u64 {
        self.projects.iter().filter_map(|p| p.flags).sum()
    }
}

/// One stage's estimate on one route family.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FamilyUnits {
    /// The stage.
    pub stage: &'static str,
    /// The route family.
    pub family: RouteFamily,
    /// Requests (each spends the account's global window and its route's window).
    pub units: u64,
}

/// The estimate.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LdPlan {
    /// Per stage and family, in the graph's order.
    pub by_family: Vec<FamilyUnits>,
    /// Every request of the sync (a lower bound when `audit_exact` is false).
    pub requests: u64,
    /// The audit log's pages are counted, not a lower bound.
    pub audit_exact: bool,
    /// What the estimate assumes, in words (one sentence each).
    pub notes: Vec<String>,
}

impl LdPlan {
    /// The requests of `family`, over every stage.
    pub fn family(&self, family: RouteFamily) -> u64 {
        self.by_family
            .iter()
            .filter(|f| f.family == family)
            .map(|f| f.units)
            .sum()
    }
}

/// Pages of a list of `n` items at `page` a page: at least one (an empty list is asked once).
pub fn pages(n: u64, page: u64) -> u64 {
    n.div_ceil(page.max(1)).max(1)
}

/// Flag scopes of a project of `environments` environments: one per group of at most
/// [`FLAG_ENVIRONMENTS`], one for a project without any.
pub fn flag_groups(environments: u64) -> u64 {
    environments.div_ceil(FLAG_ENVIRONMENTS as u64).max(1)
}

/// Requests for a project's environments beyond the embedded ones.
pub fn environment_pages(p: &ProjectProbe) -> u64 {
    p.environments
        .saturating_sub(p.embedded_environments)
        .div_ceil(u64::from(ENVIRONMENTS_PAGE))
}

/// `mean × n`, rounded up: the only rounding of a family's total.
fn scaled(mean: f64, n: u64) -> u64 {
    // Counts are far inside f64's exact integers.
    (mean * n as f64).ceil() as u64
}

/// The mean of `values`; `empty` when there are none.
fn mean(values: impl Iterator<Item = u64>, empty: f64) -> f64 {
    let (sum, n) = values.fold((0u64, 0u64), |(s, n), v| (s + v, n + 1));
    if n == 0 { empty } else { sum as f64 / n as f64 }
}

/// Flag requests: exact for the projects counted, the counted projects' mean pages per group
/// for the others (one page a group when none was counted).
fn flag_requests(projects: &[ProjectProbe]) -> u64 {
    let flag_pages = |n: u64| pages(n, u64::from(FLAGS_PAGE));
    let counted: u64 = projects
        .iter()
        .filter_map(|p| p.flags.map(|n| flag_groups(p.environments) * flag_pages(n)))
        .sum();
    let per_group = mean(projects.iter().filter_map(|p| p.flags).map(flag_pages), 1.0);
    let uncounted_groups: u64 = projects
        .iter()
        .filter(|p| p.flags.is_none())
        .map(|p| flag_groups(p.environments))
        .sum();
    counted + scaled(per_group, uncounted_groups)
}

/// The estimate for `probe`.
pub fn estimate(probe: &LdProbe) -> LdPlan {
    let mut by_family = Vec::new();
    let mut push = |stage, family, units| {
        by_family.push(FamilyUnits {
            stage,
            family,
            units,
        })
    };
    push(names::IDENTITY, route::LAUNCHDARKLY_IDENTITY, 1);
    let audit_exact = probe.audit_entries.is_some();
    let audit = if audit_exact {
        probe.audit_pages.max(1)
    } else {
        probe.audit_pages + 1
    };
    push(names::AUDIT_LOG, route::LAUNCHDARKLY_AUDIT_LOG, audit);
    push(
        names::PROJECTS,
        route::LAUNCHDARKLY_PROJECTS,
        pages(probe.visible_projects, u64::from(PROJECTS_PAGE)),
    );
    push(
        names::PROJECTS,
        route::LAUNCHDARKLY_ENVIRONMENTS,
        probe.projects.iter().map(environment_pages).sum(),
    );
    push(
        names::FLAGS,
        route::LAUNCHDARKLY_FLAGS,
        flag_requests(&probe.projects),
    );
    let segment_pages = mean(
        probe
            .segment_samples
            .iter()
            .map(|&n| pages(n, u64::from(SEGMENTS_PAGE))),
        1.0,
    );
    push(
        names::SEGMENTS,
        route::LAUNCHDARKLY_SEGMENTS,
        scaled(segment_pages, probe.environments()),
    );
    push(
        names::MEMBERS,
        route::LAUNCHDARKLY_MEMBERS,
        pages(probe.members, u64::from(MEMBERS_PAGE)),
    );
    push(names::CODE_REFS, route::LAUNCHDARKLY_CODE_REFS, 1);
    let requests = by_family.iter().map(|f| f.units).sum();
    LdPlan {
        by_family,
        requests,
        audit_exact,
        notes: notes(probe),
    }
}

/// What the estimate assumes, in words.
fn notes(probe: &LdProbe) -> Vec<String> {
    let from = match probe.audit_after {
        Some(after) => {
            format!("after {after} (epoch ms, the newest stored entry's millisecond asked again)")
        }
        None => "from its start".to_owned(),
    };
    let audit = match probe.audit_entries {
        Some(n) => format!(
            "The audit log has no totalCount: the probe read it {from} as the sync reads it, \
             {n} entries in {} pages of at most {AUDIT_PAGE}.",
            probe.audit_pages.max(1)
        ),
        None => format!(
            "The audit log has no totalCount: the probe read it {from} for {} pages of \
             {AUDIT_PAGE} and it goes on, so its pages and the total are lower bounds.",
            probe.audit_pages
        ),
    };
    let mut out = vec![
        audit,
        "Projects, flags, segments, members and code references are estimated as re-read \
         whole (a first run, a full run, or one whose audit log shows a change); otherwise a run \
         asks only the identity and the audit log."
            .to_owned(),
    ];
    let sampled = probe.projects.iter().filter(|p| p.flags.is_some()).count();
    if sampled < probe.projects.len() {
        out.push(format!(
            "Flags were counted in {sampled} of {} projects; the others are taken as their mean.",
            probe.projects.len()
        ));
    }
    let environments = probe.environments();
    if (probe.segment_samples.len() as u64) < environments {
        out.push(format!(
            "Segments were counted in {} of {environments} environments; the others are taken as \
             their mean.",
            probe.segment_samples.len()
        ));
    }
    out
}

#[cfg(test)]
mod tests;
