//! `headroom sim`'s Linear flags: a seeded Linear workspace and its limits.

use headroom_sim::{LinearLimits, LinearWorkspaceSpec};

/// The seeded Linear workspace (`--linear-workspace NAME` and its sizes and limits).
#[derive(Debug, Clone, clap::Args)]
pub(super) struct LinearArgs {
    /// Linear: seed a workspace with this URL key (e.g. acme), served at POST /linear/graphql;
    /// a token is sent raw as an API key or as `Bearer` for OAuth.
    #[arg(long, value_name = "NAME")]
    linear_workspace: Option<String>,
    /// Linear workspace: teams.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 2,
        requires = "linear_workspace"
    )]
    linear_teams: usize,
    /// Linear workspace: issues per team.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 20,
        requires = "linear_workspace"
    )]
    linear_issues: usize,
    /// Linear workspace: users besides the token owners.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 4,
        requires = "linear_workspace"
    )]
    linear_users: usize,
    /// Linear workspace: at most this many comments, attachments and history entries per issue.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3,
        requires = "linear_workspace"
    )]
    linear_children: usize,
    /// Linear: requests per hour of an API key (OAuth tokens get twice as many).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 2_500,
        requires = "linear_workspace"
    )]
    linear_requests_per_hour: u64,
    /// Linear: complexity points per hour of an API key (OAuth tokens get two thirds).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 3_000_000,
        requires = "linear_workspace"
    )]
    linear_complexity_per_hour: u64,
    /// Linear: the largest complexity one document may have.
    #[arg(
        long,
        value_name = "N",
        default_value_t = 10_000,
        requires = "linear_workspace"
    )]
    linear_max_complexity: u64,
}

impl LinearArgs {
    /// The workspace these flags seed, if any.
    pub(super) fn spec(&self) -> Option<LinearWorkspaceSpec> {
        let name = self.linear_workspace.as_ref()?;
        let limits = LinearLimits {
            api_key_requests: self.linear_requests_per_hour,
            api_key_complexity: self.linear_complexity_per_hour,
            oauth_requests: self.linear_requests_per_hour.saturating_mul(2),
            oauth_complexity: self.linear_complexity_per_hour / 3 * 2,
            max_query_complexity: self.linear_max_complexity,
            ..LinearLimits::default()
        };
        let mut spec = LinearWorkspaceSpec::new(name.clone())
            .with_teams(self.linear_teams)
            .with_issues_per_team(self.linear_issues)
            .with_limits(limits);
        spec.users = self.linear_users;
        spec.max_comments = self.linear_children;
        spec.max_attachments = self.linear_children;
        spec.max_history = self.linear_children.max(1);
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
        linear: LinearArgs,
    }

    #[test]
    fn the_linear_flags_seed_the_workspace_they_name() {
        let none = Cli::try_parse_from(["sim"]).map(|c| c.linear.spec());
        assert!(matches!(none, Ok(None)));
        let cli = Cli::try_parse_from([
            "sim",
            "--linear-workspace",
            "acme",
            "--linear-teams",
            "5",
            "--linear-issues",
            "300",
            "--linear-complexity-per-hour",
            "30000",
        ]);
        let spec = cli.ok().and_then(|c| c.linear.spec());
        let Some(spec) = spec else {
            panic!("the flags must seed a workspace");
        };
        assert_eq!(
            (spec.name.as_str(), spec.teams, spec.issues_per_team),
            ("acme", 5, 300)
        );
        assert_eq!(spec.limits.api_key_complexity, 30_000);
        assert_eq!(spec.limits.oauth_complexity, 20_000);
        assert_eq!(spec.limits.api_key_requests, 2_500);
        assert!(Cli::try_parse_from(["sim", "--linear-teams", "5"]).is_err());
    }
}
