//! The estimate's arithmetic, pure: each family is the stages' pages per scope.

use super::*;
use proptest::prelude::*;

/// An account of `projects` projects of `envs` environments (20 embedded at most), `flags`
/// flags each (every project counted), `segments` per environment (every one counted),
/// `members` members and an audit log read to its end in `audit_pages` pages.
fn uniform(
    projects: u64,
    envs: u64,
    flags: u64,
    segments: u64,
    members: u64,
    audit_pages: u64,
) -> LdProbe {
    LdProbe {
        visible_projects: projects,
        projects: (0..projects)
            .map(|i| ProjectProbe {
                key: format!("p{i}"),
                environments: envs,
                embedded_environments: envs.min(20),
                flags: Some(flags),
            })
            .collect(),
        segment_samples: vec![segments; (projects * envs) as usize],
        members,
        audit_after: None,
        audit_entries: Some(audit_pages * 19),
        audit_pages,
        requests: 0,
    }
}

#[test]
fn a_uniform_account_is_estimated_as_the_stages_page_it() {
    // 21 projects (two pages of 20), 25 environments each (5 beyond the embedded 20: one
    // page), 9 flag groups of 3 each asking 2 pages of 100 for 150 flags, 51 segments (2
    // pages of 50) per environment, 101 members (2 pages of 100), 4 audit pages.
    let plan = estimate(&uniform(21, 25, 150, 51, 101, 4));
    assert_eq!(plan.family(route::LAUNCHDARKLY_IDENTITY), 1);
    assert_eq!(plan.family(route::LAUNCHDARKLY_AUDIT_LOG), 4);
    assert_eq!(plan.family(route::LAUNCHDARKLY_PROJECTS), 2);
    assert_eq!(plan.family(route::LAUNCHDARKLY_ENVIRONMENTS), 21);
    assert_eq!(plan.family(route::LAUNCHDARKLY_FLAGS), 21 * 9 * 2);
    assert_eq!(plan.family(route::LAUNCHDARKLY_SEGMENTS), 21 * 25 * 2);
    assert_eq!(plan.family(route::LAUNCHDARKLY_MEMBERS), 2);
    assert_eq!(plan.family(route::LAUNCHDARKLY_CODE_REFS), 1);
    assert!(plan.audit_exact);
    assert_eq!(
        plan.requests,
        1 + 4 + 2 + 21 + 21 * 9 * 2 + 21 * 25 * 2 + 2 + 1
    );
    // An empty account still asks every list once, and a project without environments its
    // flags once.
    // Identity, one audit page, one projects page, one members page, code references.
    let empty = estimate(&uniform(0, 0, 0, 0, 0, 1));
    assert_eq!(empty.requests, 5);
    let bare = estimate(&uniform(1, 0, 0, 0, 0, 1));
    assert_eq!(bare.family(route::LAUNCHDARKLY_FLAGS), 1);
    assert_eq!(bare.family(route::LAUNCHDARKLY_SEGMENTS), 0);
}

#[test]
fn an_audit_log_longer_than_the_probe_read_is_an_estimate_at_least_and_says_so() {
    let mut probe = uniform(1, 2, 5, 5, 5, AUDIT_PROBE_PAGES);
    probe.audit_entries = None;
    let plan = estimate(&probe);
    assert!(!plan.audit_exact);
    assert_eq!(
        plan.family(route::LAUNCHDARKLY_AUDIT_LOG),
        AUDIT_PROBE_PAGES + 1
    );
    assert!(plan.notes[0].contains("lower bounds"), "{:?}", plan.notes);
    probe.audit_entries = Some(90);
    let read = estimate(&probe);
    assert!(read.audit_exact);
    assert!(read.notes[0].contains("90 entries"), "{:?}", read.notes);
}

#[test]
fn unsampled_scopes_are_taken_as_the_sampled_mean() {
    // Four projects of 4 environments (2 flag groups each), two counted: 250 flags (3 pages
    // a group) and 50 (1 page): a mean of 2 pages a group for the other two projects' 4
    // groups.
    let mut probe = uniform(4, 4, 0, 10, 1, 1);
    probe.projects[0].flags = Some(250);
    probe.projects[1].flags = Some(50);
    probe.projects[2].flags = None;
    probe.projects[3].flags = None;
    // Segments counted in 2 of the 16 environments: 1 and 3 pages, a mean of 2.
    probe.segment_samples = vec![10, 101];
    let plan = estimate(&probe);
    assert_eq!(plan.family(route::LAUNCHDARKLY_FLAGS), 2 * 3 + 2 + 4 * 2);
    assert_eq!(plan.family(route::LAUNCHDARKLY_SEGMENTS), 16 * 2);
    assert_eq!(plan.notes.len(), 4, "{:?}", plan.notes);
}

proptest! {
    /// Every family is its scopes' pages (`ceil(n / limit)`, at least one a scope); the total
    /// is their sum; more of anything never costs less.
    #[test]
    fn each_scope_is_its_pages_and_more_work_never_costs_less(
        projects in 0u64..45,
        envs in 0u64..50,
        flags in 0u64..400,
        segments in 0u64..200,
        members in 0u64..400,
        audit in 1u64..6,
        which in 0usize..6,
        more in 1u64..60,
    ) {
        let base = [projects, envs, flags, segments, members, audit];
        let plan = estimate(&uniform(projects, envs, flags, segments, members, audit));
        prop_assert_eq!(plan.requests, plan.by_family.iter().map(|f| f.units).sum::<u64>());
        prop_assert_eq!(plan.family(route::LAUNCHDARKLY_PROJECTS), projects.div_ceil(20).max(1));
        prop_assert_eq!(
            plan.family(route::LAUNCHDARKLY_ENVIRONMENTS),
            projects * envs.saturating_sub(20).div_ceil(20)
        );
        prop_assert_eq!(
            plan.family(route::LAUNCHDARKLY_FLAGS),
            projects * envs.div_ceil(3).max(1) * flags.div_ceil(100).max(1)
        );
        prop_assert_eq!(
            plan.family(route::LAUNCHDARKLY_SEGMENTS),
            projects * envs * segments.div_ceil(50).max(1)
        );
        prop_assert_eq!(plan.family(route::LAUNCHDARKLY_MEMBERS), members.div_ceil(100).max(1));
        prop_assert_eq!(plan.family(route::LAUNCHDARKLY_AUDIT_LOG), audit);
        let mut larger = base;
        larger[which] += more;
        let [p, e, f, s, m, a] = larger;
        let bigger = estimate(&uniform(p, e, f, s, m, a));
        prop_assert!(bigger.requests >= plan.requests);
        for f in &plan.by_family {
            prop_assert!(bigger.family(f.family) >= f.units);
        }
    }

    /// Taking some projects' flags as the sampled mean is exact when the projects are alike.
    #[test]
    fn the_sampled_mean_is_exact_for_alike_projects(
        projects in 1u64..30,
        envs in 0u64..12,
        flags in 0u64..400,
        counted in 1usize..30,
    ) {
        let whole = estimate(&uniform(projects, envs, flags, 1, 1, 1));
        let mut probe = uniform(projects, envs, flags, 1, 1, 1);
        for p in probe.projects.iter_mut().skip(counted) {
            p.flags = None;
        }
        let sampled = estimate(&probe);
        prop_assert_eq!(
            sampled.family(route::LAUNCHDARKLY_FLAGS),
            whole.family(route::LAUNCHDARKLY_FLAGS)
        );
    }
}
