//! `headroom sim`'s Jira flags: a seeded Jira Cloud site and its limits.

use headroom_sim::{JiraLimits, JiraSiteSpec};

/// The seeded Jira site (`--jira-site NAME` and its sizes and limits).
#[derive(Debug, Clone, clap::Args)]
pub(super) struct JiraArgs {
    /// Jira: seed a Jira Cloud site with this name (e.g. acme), served read-only under
    /// /rest/api/3 and /rest/agile/1.0; token owners sign in as LOGIN@example.com.
    #[arg(long, value_name = "NAME")]
    jira_site: Option<String>,
    /// Jira site: projects.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "jira_site")]
    jira_projects: usize,
    /// Jira site: issues per project.
    #[arg(long, value_name = "N", default_value_t = 20, requires = "jira_site")]
    jira_issues: usize,
    /// Jira site: comments, changelog entries and worklogs per issue.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "jira_site")]
    jira_children: usize,
    /// Jira site: boards per project (scrum and kanban in turn) and sprints per scrum board.
    #[arg(long, value_name = "BOARDS,SPRINTS", default_value = "2,4", value_parser = parse_pair, requires = "jira_site")]
    jira_boards: (usize, usize),
    /// Jira site: every user's time zone (IANA name), read for JQL dates and shown by /myself.
    #[arg(long, value_name = "TZ", default_value = "UTC", requires = "jira_site")]
    jira_time_zone: String,
    /// Jira site: the last N projects are browsable by no token owner.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "jira_site")]
    jira_restricted_projects: usize,
    /// Jira: steady requests per second of each endpoint and method (0: no burst limit).
    #[arg(long, value_name = "N", default_value_t = 100, requires = "jira_site")]
    jira_burst_per_sec: u64,
    /// Jira: the burst bucket's buffer above its steady rate.
    #[arg(long, value_name = "N", default_value_t = 100, requires = "jira_site")]
    jira_burst_buffer: u64,
    /// Jira: an OAuth app's points per UTC hour (0: no quota).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 65_000,
        requires = "jira_site"
    )]
    jira_app_points_per_hour: u64,
    /// Jira: write X-RateLimit-Reset without seconds (2026-03-26T16:01Z).
    #[arg(long, requires = "jira_site")]
    jira_reset_without_seconds: bool,
}

fn parse_pair(s: &str) -> Result<(usize, usize), String> {
    let (a, b) = s
        .split_once(',')
        .ok_or_else(|| "expected BOARDS,SPRINTS".to_owned())?;
    let n = |t: &str| t.trim().parse::<usize>().map_err(|e| e.to_string());
    Ok((n(a)?, n(b)?))
}

impl JiraArgs {
    /// The site these flags seed, if any.
    pub(super) fn spec(&self, seed: u64) -> Option<JiraSiteSpec> {
        let name = self.jira_site.as_ref()?;
        let c = self.jira_children;
        let mut limits = JiraLimits::default();
        limits.burst_per_sec = self.jira_burst_per_sec;
        limits.burst_buffer = self.jira_burst_buffer;
        limits.app_points_per_hour = self.jira_app_points_per_hour;
        limits.reset_without_seconds = self.jira_reset_without_seconds;
        let mut spec = JiraSiteSpec::new(name.clone())
            .with_size(self.jira_projects, self.jira_issues)
            .with_children(c, c, c)
            .with_boards(self.jira_boards.0, self.jira_boards.1)
            .with_time_zone(self.jira_time_zone.clone())
            .with_seed(seed)
            .with_limits(limits);
        spec.restricted_projects = self.jira_restricted_projects;
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
        args: JiraArgs,
    }

    fn parse(argv: &[&str]) -> Result<JiraArgs, clap::Error> {
        let mut full = vec!["sim"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full).map(|c| c.args)
    }

    #[test]
    fn the_jira_site_flags_parse_into_its_spec() {
        assert!(parse(&[]).expect("valid").spec(1).is_none());
        let a = parse(&[
            "--jira-site",
            "acme",
            "--jira-projects",
            "2",
            "--jira-issues",
            "7",
            "--jira-time-zone",
            "America/Sao_Paulo",
            "--jira-boards",
            "3,5",
            "--jira-burst-per-sec",
            "4",
            "--jira-reset-without-seconds",
        ])
        .expect("valid");
        let spec = a.spec(9).expect("a site");
        assert_eq!(
            (spec.name.as_str(), spec.projects, spec.issues_per_project),
            ("acme", 2, 7)
        );
        assert_eq!(spec.time_zone, "America/Sao_Paulo");
        assert_eq!(
            (spec.boards_per_project, spec.sprints_per_board, spec.seed),
            (3, 5, 9)
        );
        assert_eq!(spec.limits.burst_per_sec, 4);
        assert!(spec.limits.reset_without_seconds);
        assert!(
            parse(&["--jira-projects", "2"]).is_err(),
            "sizes need a site"
        );
    }
}
