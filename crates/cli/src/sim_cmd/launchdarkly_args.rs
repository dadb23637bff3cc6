//! `headroom sim`'s LaunchDarkly flags: a seeded LaunchDarkly account, its sizes and its
//! account-global and per-route windows.

use headroom_core::clock::SignedDuration;
use headroom_sim::launchdarkly::ROUTES;
use headroom_sim::{LdAccountSpec, LdLimits};

/// One `--launchdarkly-route-limit`: the route templates it names and their limit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct RouteLimit {
    routes: Vec<String>,
    per_window: u64,
}

/// Parses `FAMILY=N` (`flags=5`, every route of the family) or `TEMPLATE=N`
/// (`GET /api/v2/flags/{projectKey}=5`).
fn parse_route_limit(s: &str) -> Result<RouteLimit, String> {
    let (name, n) = s
        .rsplit_once('=')
        .ok_or_else(|| format!("expected ROUTE=N, got {s:?}"))?;
    let per_window: u64 = n
        .trim()
        .parse()
        .map_err(|_| format!("{n:?} is not a number of requests"))?;
    if per_window == 0 {
        return Err("a route's limit must be at least 1 a window".into());
    }
    let name = name.trim();
    let routes: Vec<String> = ROUTES
        .iter()
        .filter(|(template, family)| *template == name || *family == name)
        .map(|(template, _)| (*template).to_owned())
        .collect();
    if routes.is_empty() {
        let families: Vec<&str> = ROUTES.iter().map(|(_, f)| *f).collect();
        return Err(format!(
            "unknown route {name:?}: a family ({}) or a template such as {:?}",
            families.join(", "),
            ROUTES[3].0
        ));
    }
    Ok(RouteLimit { routes, per_window })
}

/// The seeded LaunchDarkly account (`--launchdarkly-account NAME` and its sizes and limits).
#[derive(Debug, Clone, clap::Args)]
pub(super) struct LaunchDarklyArgs {
    /// LaunchDarkly: seed an account with this name (e.g. acme), served under /api/v2; a
    /// token is sent raw in Authorization, and every token belongs to the one account.
    #[arg(long, value_name = "NAME")]
    launchdarkly_account: Option<String>,
    /// LaunchDarkly account: projects.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 2,
        requires = "launchdarkly_account"
    )]
    launchdarkly_projects: usize,
    /// LaunchDarkly account: environments per project.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 2,
        requires = "launchdarkly_account"
    )]
    launchdarkly_environments: usize,
    /// LaunchDarkly account: flags per project.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 30,
        requires = "launchdarkly_account"
    )]
    launchdarkly_flags: usize,
    /// LaunchDarkly account: segments per environment.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        requires = "launchdarkly_account"
    )]
    launchdarkly_segments: usize,
    /// LaunchDarkly account: members besides the token owners.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 5,
        requires = "launchdarkly_account"
    )]
    launchdarkly_members: usize,
    /// LaunchDarkly account: audit log entries.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 45,
        requires = "launchdarkly_account"
    )]
    launchdarkly_audit_entries: usize,
    /// LaunchDarkly account: code-reference repositories.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        requires = "launchdarkly_account"
    )]
    launchdarkly_code_refs: usize,
    /// LaunchDarkly: the length of the global and route windows, in milliseconds.
    #[arg(
        long,
        value_name = "MS",
        default_value_t = 10_000,
        requires = "launchdarkly_account"
    )]
    launchdarkly_window_ms: i64,
    /// LaunchDarkly: requests per window of the whole account.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 100,
        requires = "launchdarkly_account"
    )]
    launchdarkly_global_per_window: u64,
    /// LaunchDarkly: requests per window of each route, unless --launchdarkly-route-limit says.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 25,
        requires = "launchdarkly_account"
    )]
    launchdarkly_route_per_window: u64,
    /// LaunchDarkly: one route family's (flags, audit_log, code_refs, projects, segments,
    /// members, caller_identity) or route template's requests per window; repeatable.
    #[arg(long, value_name = "ROUTE=N", value_parser = parse_route_limit, requires = "launchdarkly_account")]
    launchdarkly_route_limit: Vec<RouteLimit>,
    /// LaunchDarkly: answer 429s without Retry-After (only the X-Ratelimit-Reset header).
    #[arg(long, requires = "launchdarkly_account")]
    launchdarkly_no_retry_after: bool,
}

impl LaunchDarklyArgs {
    /// The account these flags seed, if any.
    pub(super) fn spec(&self) -> Option<LdAccountSpec> {
        let name = self.launchdarkly_account.as_ref()?;
        let mut limits = LdLimits::default()
            .with_window(SignedDuration::from_millis(self.launchdarkly_window_ms))
            .with_global(self.launchdarkly_global_per_window)
            .with_route_default(self.launchdarkly_route_per_window)
            .with_retry_after(!self.launchdarkly_no_retry_after);
        for limit in &self.launchdarkly_route_limit {
            for route in &limit.routes {
                limits = limits.with_route(route.clone(), limit.per_window);
            }
        }
        let spec = LdAccountSpec::new(name.clone())
            .with_projects(self.launchdarkly_projects, self.launchdarkly_environments)
            .with_flags(self.launchdarkly_flags)
            .with_segments(self.launchdarkly_segments)
            .with_members(self.launchdarkly_members)
            .with_audit_entries(self.launchdarkly_audit_entries)
            .with_code_ref_repositories(self.launchdarkly_code_refs)
            .with_limits(limits);
        Some(spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        ld: LaunchDarklyArgs,
    }

    #[test]
    fn the_launchdarkly_flags_seed_the_account_they_name_with_its_windows() {
        let none = Cli::try_parse_from(["sim"]).map(|c| c.ld.spec());
        assert!(matches!(none, Ok(None)));
        let cli = Cli::try_parse_from([
            "sim",
            "--launchdarkly-account",
            "acme",
            "--launchdarkly-flags",
            "250",
            "--launchdarkly-window-ms",
            "1000",
            "--launchdarkly-route-limit",
            "flags=5",
            "--launchdarkly-route-limit",
            "GET /api/v2/auditlog=2",
            "--launchdarkly-no-retry-after",
        ]);
        let Some(spec) = cli.ok().and_then(|c| c.ld.spec()) else {
            panic!("the flags must seed an account");
        };
        assert_eq!(
            (spec.name.as_str(), spec.flags_per_project, spec.projects),
            ("acme", 250, 2)
        );
        let l = &spec.limits;
        assert_eq!(l.window, SignedDuration::from_secs(1));
        assert_eq!(l.route_limit("GET /api/v2/flags/{projectKey}"), 5);
        assert_eq!(l.route_limit("GET /api/v2/auditlog"), 2);
        assert_eq!(l.route_limit("GET /api/v2/members"), 25);
        assert!(!l.retry_after);
        assert!(Cli::try_parse_from(["sim", "--launchdarkly-flags", "5"]).is_err());
        let bad = [
            "sim",
            "--launchdarkly-account",
            "a",
            "--launchdarkly-route-limit",
            "nope=3",
        ];
        assert!(Cli::try_parse_from(bad).is_err());
    }
}
