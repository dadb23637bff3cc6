//! Stages 4–7: the lists re-read whole when the audit log says so ([`super::refresh`]) —
//! each project's flags, each environment's segments, the account's members and its
//! code-reference repositories. Each scope pages from its own checkpoint ([`send::follow`]);
//! the per-project and per-environment scopes run side by side.
//!
//! Flags: since API version 20240415 LaunchDarkly returns a flag's per-environment state
//! (`on`, `archived`, and the `_summary` of its targeting: what each variation is served by,
//! prerequisites) only for the environments a request names (`env`, which may be repeated);
//! the published description caps that filter at three environments. The default (summary)
//! form is asked: the state and the targeting summary are in it, and the rule and target
//! lists `summary=0` adds would only make each page heavier. So a project's flags are listed
//! once per group of up to [`FLAG_ENVIRONMENTS`] of its environments — once for most projects
//! — each group a scope of its own.

use async_trait::async_trait;
use headroom_core::route;
use headroom_sync::{Stage, StageCtx, StageDecl, StageError};

use super::identity::account_of;
use super::projects::{Project, listed};
use super::refresh;
use super::send::{self, Endpoint};
use crate::rows::{self, Origin};

/// Flags asked a page (LaunchDarkly documents no maximum; `_links.next` is followed whatever
/// a page holds).
pub(crate) const FLAGS_PAGE: u32 = 100;
/// Segments asked a page.
pub(crate) const SEGMENTS_PAGE: u32 = 50;
/// Members asked a page.
pub(crate) const MEMBERS_PAGE: u32 = 100;
/// Environments one flag request names, at most.
pub(crate) const FLAG_ENVIRONMENTS: usize = 3;

const FLAGS: Endpoint = Endpoint {
    family: route::LAUNCHDARKLY_FLAGS,
    route: "GET /api/v2/flags/{projectKey}",
    limit: Some(FLAGS_PAGE),
};
const SEGMENTS: Endpoint = Endpoint {
    family: route::LAUNCHDARKLY_SEGMENTS,
    route: "GET /api/v2/segments/{projectKey}/{environmentKey}",
    limit: Some(SEGMENTS_PAGE),
};
const MEMBERS: Endpoint = Endpoint {
    family: route::LAUNCHDARKLY_MEMBERS,
    route: "GET /api/v2/members",
    limit: Some(MEMBERS_PAGE),
};
const CODE_REFS: Endpoint = Endpoint {
    family: route::LAUNCHDARKLY_CODE_REFS,
    route: "GET /api/v2/code-refs/repositories",
    limit: None,
};

macro_rules! stage {
    ($name:ident, $doc:literal) => {
        #[doc = $doc]
        #[derive(Debug)]
        pub struct $name {
            decl: StageDecl,
        }

        impl $name {
            /// The stage.
            pub fn new(decl: StageDecl) -> Self {
                Self { decl }
            }
        }
    };
}

stage!(FlagsStage, "Stage 4: each project's flags.");
stage!(SegmentsStage, "Stage 5: each environment's segments.");
stage!(MembersStage, "Stage 6: the account's members.");
stage!(CodeRefsStage, "Stage 7: the code-reference repositories.");

/// One scope of flags: a project and a group of its environments.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FlagScope {
    /// The project's key.
    pub(crate) project: String,
    /// The group's position among the project's groups.
    pub(crate) group: usize,
    /// The environments the group filters on (none for a project without environments).
    pub(crate) environments: Vec<String>,
}

impl FlagScope {
    /// The checkpoint scope: `proj-a#0`.
    fn scope(&self) -> String {
        format!("{}#{}", self.project, self.group)
    }

    /// The first page's path.
    fn path(&self) -> String {
        let mut path = format!(
            "/api/v2/flags/{}?limit={FLAGS_PAGE}",
            send::segment(&self.project)
        );
        for env in &self.environments {
            path.push_str("&env=");
            path.push_str(&send::segment(env));
        }
        path
    }
}

/// The flag scopes of `projects`: each project's environments in groups of at most
/// [`FLAG_ENVIRONMENTS`].
pub(crate) fn flag_scopes(projects: &[Project]) -> Vec<FlagScope> {
    let mut out = Vec::new();
    for p in projects {
        if p.environments.is_empty() {
            out.push(FlagScope {
                project: p.key.clone(),
                group: 0,
                environments: Vec::new(),
            });
        }
        for (group, envs) in p.environments.chunks(FLAG_ENVIRONMENTS).enumerate() {
            out.push(FlagScope {
                project: p.key.clone(),
                group,
                environments: envs.to_vec(),
            });
        }
    }
    out
}

#[async_trait]
impl Stage for FlagsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        if !refresh::wanted(ctx).await? {
            return Ok(());
        }
        let account = account_of(ctx).await?;
        let scopes = flag_scopes(&listed(ctx).await?.projects);
        let account = &account;
        // Each scope is a chain of pages: up to the ceiling of them run at once, as
        // repositories do. Half the slots (`for_each_request`) left the four flag chains,
        // the run's longest, waiting behind segments (`launchdarkly_makespan`, latency case).
        ctx.for_each_chain(scopes, |s| async move {
            let what = format!("flags of {}", s.project);
            let rows = |items: &[serde_json::Value]| {
                let origin = Origin {
                    account,
                    now: ctx.now(),
                };
                items
                    .iter()
                    .flat_map(|f| rows::flag_rows(f, &s.project, origin))
                    .collect()
            };
            send::follow(ctx, &s.scope(), &what, FLAGS, s.path(), rows).await
        })
        .await
    }
}

#[async_trait]
impl Stage for SegmentsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        if !refresh::wanted(ctx).await? {
            return Ok(());
        }
        let account = account_of(ctx).await?;
        let pairs: Vec<(String, String)> = listed(ctx)
            .await?
            .projects
            .into_iter()
            .flat_map(|p| {
                let key = p.key;
                p.environments.into_iter().map(move |e| (key.clone(), e))
            })
            .collect();
        let account = &account;
        ctx.for_each_chain(pairs, |(project, env)| async move {
            let scope = format!("{project}/{env}");
            let what = format!("segments of {project}/{env}");
            let first = format!(
                "/api/v2/segments/{}/{}?limit={SEGMENTS_PAGE}",
                send::segment(&project),
                send::segment(&env)
            );
            let rows = |items: &[serde_json::Value]| {
                let origin = Origin {
                    account,
                    now: ctx.now(),
                };
                items
                    .iter()
                    .flat_map(|s| rows::segment_rows(s, &project, &env, origin))
                    .collect()
            };
            send::follow(ctx, &scope, &what, SEGMENTS, first, rows).await
        })
        .await
    }
}

#[async_trait]
impl Stage for MembersStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        if !refresh::wanted(ctx).await? {
            return Ok(());
        }
        let account = account_of(ctx).await?;
        let first = format!("/api/v2/members?limit={MEMBERS_PAGE}");
        let rows = |items: &[serde_json::Value]| {
            let origin = Origin {
                account: &account,
                now: ctx.now(),
            };
            items
                .iter()
                .flat_map(|m| rows::member_rows(m, origin))
                .collect()
        };
        send::follow(ctx, "", "members", MEMBERS, first, rows).await
    }
}

#[async_trait]
impl Stage for CodeRefsStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        if !refresh::wanted(ctx).await? {
            return Ok(());
        }
        let account = account_of(ctx).await?;
        // One answer: the endpoint takes no limit or offset. With its branches, a
        // repository's row names its default branch's scanned commit and its last scan.
        let first = "/api/v2/code-refs/repositories?withBranches=true".to_owned();
        let rows = |items: &[serde_json::Value]| {
            let origin = Origin {
                account: &account,
                now: ctx.now(),
            };
            items
                .iter()
                .flat_map(|r| rows::code_ref_rows(r, origin))
                .collect()
        };
        send::follow(ctx, "", "code references", CODE_REFS, first, rows).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_flag_page_names_its_project_and_at_most_three_environments() {
        let projects = vec![
            Project {
                key: "p".into(),
                environments: vec!["a".into(), "b".into(), "c".into(), "d".into()],
            },
            Project {
                key: "empty".into(),
                environments: Vec::new(),
            },
        ];
        let scopes = flag_scopes(&projects);
        let paths: Vec<String> = scopes.iter().map(FlagScope::path).collect();
        assert_eq!(
            paths,
            [
                "/api/v2/flags/p?limit=100&env=a&env=b&env=c",
                "/api/v2/flags/p?limit=100&env=d",
                "/api/v2/flags/empty?limit=100",
            ]
        );
        let names: Vec<String> = scopes.iter().map(FlagScope::scope).collect();
        assert_eq!(names, ["p#0", "p#1", "empty#0"]);
    }

    proptest! {
        /// Every environment of every project is in exactly one flag scope, and no scope
        /// filters on more than three.
        #[test]
        fn every_environment_is_in_exactly_one_flag_scope(
            envs in proptest::collection::vec(0usize..9, 0..6),
        ) {
            let projects: Vec<Project> = envs
                .iter()
                .enumerate()
                .map(|(i, n)| Project {
                    key: format!("p{i}"),
                    environments: (0..*n).map(|e| format!("e{e}")).collect(),
                })
                .collect();
            let scopes = flag_scopes(&projects);
            for p in &projects {
                let mine: Vec<&FlagScope> = scopes.iter().filter(|s| s.project == p.key).collect();
                prop_assert!(!mine.is_empty());
                let covered: Vec<String> = mine.iter().flat_map(|s| s.environments.clone()).collect();
                prop_assert_eq!(&covered, &p.environments);
                prop_assert!(mine.iter().all(|s| s.environments.len() <= FLAG_ENVIRONMENTS));
            }
            let names: std::collections::BTreeSet<String> = scopes.iter().map(FlagScope::scope).collect();
            prop_assert_eq!(names.len(), scopes.len());
        }
    }
}
