//! `headroom sim`: the GitHub simulator on loopback, for the demo, benchmarks and third-party
//! clients. Glue only: the simulator lives in headroom-sim.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;
use headroom_core::clock::{SignedDuration, TokioClock};
use headroom_sim::{
    ExternalSpend, GitlabEndpointLimits, GitlabGroupSpec, Resource, Scenario, SimConfig, Simulator,
    TlsConfig, TokenSpec, serve,
};

use crate::outcome::{CliError, CommandResult, Outcome};

mod jira_args;
mod launchdarkly_args;
mod linear_args;

fn scenario_help() -> String {
    format!(
        "Scenarios (--scenario NAME):\n{}\nTokens: --token TOKEN=LOGIN maps a token to a user (several tokens of one user share its quota); --token TOKEN=installation:ID makes an app installation token with its own quota. Requests without a token are keyed by client IP (60/h).",
        Scenario::help_text()
    )
}

fn parse_scenario(s: &str) -> Result<Scenario, String> {
    s.parse::<Scenario>().map_err(|e| e.to_string())
}

fn parse_token(s: &str) -> Result<TokenSpec, String> {
    TokenSpec::parse(s).map_err(|e| e.to_string())
}

fn parse_spend(s: &str) -> Result<ExternalSpend, String> {
    ExternalSpend::parse(s).map_err(|e| e.to_string())
}

/// `GROUP,PROJECT,GROUP_PROJECTS` requests per minute, e.g. GitLab.com's `400,400,600`.
fn parse_endpoint_limits(s: &str) -> Result<GitlabEndpointLimits, String> {
    let parts: Vec<Result<u64, _>> = s.split(',').map(|p| p.trim().parse::<u64>()).collect();
    match parts.as_slice() {
        [Ok(g), Ok(p), Ok(gp)] => Ok(GitlabEndpointLimits {
            group_per_minute: *g,
            project_per_minute: *p,
            group_projects_per_minute: *gp,
        }),
        _ => Err(format!(
            "{s:?} is not GROUP,PROJECT,GROUP_PROJECTS requests per minute (e.g. 400,400,600)"
        )),
    }
}

fn parse_probability(s: &str) -> Result<f64, String> {
    let p: f64 = s.parse().map_err(|_| format!("{s:?} is not a number"))?;
    if (0.0..=1.0).contains(&p) {
        Ok(p)
    } else {
        Err(format!("{p} is not a probability between 0 and 1"))
    }
}

/// `BUCKET=MS`: a bucket's own fixed latency, e.g. `graphql=800`.
fn parse_bucket_latency(s: &str) -> Result<(Resource, u64), String> {
    let (bucket, ms) = s
        .split_once('=')
        .ok_or_else(|| format!("{s:?} is not BUCKET=MILLISECONDS (e.g. graphql=800)"))?;
    let resource = Resource::from_name(bucket.trim()).ok_or_else(|| {
        let names: Vec<&str> = Resource::ALL.iter().map(|r| r.name()).collect();
        format!("{bucket:?} is not a bucket (one of {})", names.join(", "))
    })?;
    let ms = ms
        .trim()
        .parse()
        .map_err(|_| format!("{ms:?} is not a whole number of milliseconds"))?;
    Ok((resource, ms))
}

/// Serve a simulated GitHub API, and GitLab's REST v4 under /api/v4, on loopback (HTTP or
/// HTTPS) until stopped.
///
/// Prints `listening on http://127.0.0.1:PORT` (or https) as its first line. Defaults are
/// GitHub's: 5,000/h core per user, 60/h per IP unauthenticated, search 30/min (10
/// unauthenticated), GraphQL 5,000 points/h, 100 concurrent requests per identity; GitLab's
/// throttle 2,000 requests per user per minute.
#[derive(Debug, clap::Args)]
#[command(after_help = scenario_help())]
pub struct SimArgs {
    /// Address to listen on (loopback; port 0 picks a free one).
    #[arg(long, default_value = "127.0.0.1:0")]
    addr: SocketAddr,
    /// Named behaviour to play (see the list below).
    #[arg(long, default_value = "default", value_parser = parse_scenario)]
    scenario: Scenario,
    /// The generated organization's login.
    #[arg(long, default_value = "acme")]
    org: String,
    /// How many repositories the organization has.
    #[arg(long, default_value_t = 12)]
    repos: usize,
    /// Seed of the generated data and of random faults.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Accept a token: TOKEN=LOGIN, or TOKEN=installation:ID (repeatable).
    #[arg(long = "token", value_name = "TOKEN=LOGIN", value_parser = parse_token)]
    tokens: Vec<TokenSpec>,
    /// Core requests per window per user.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    core_limit: u64,
    /// Search requests per minute per user.
    #[arg(long, default_value_t = 30, value_parser = clap::value_parser!(u64).range(1..))]
    search_limit: u64,
    /// GraphQL points per window per user.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    graphql_limit: u64,
    /// Length of the primary window in seconds (shorten it for demos; limits stay as given).
    #[arg(long, default_value_t = 3_600, value_parser = clap::value_parser!(u64).range(1..=86_400))]
    window_secs: u64,
    /// Concurrent requests per identity before a secondary limit answers.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..))]
    concurrency_limit: u32,
    /// Latency added to every request, in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// Extra latency drawn uniformly from 0..=N milliseconds (seeded).
    #[arg(long, default_value_t = 0)]
    latency_jitter_ms: u64,
    /// A bucket's own latency in place of --latency-ms, as BUCKET=MS (core, search,
    /// code_search, graphql); repeat for several, e.g. `core=150 --bucket-latency-ms graphql=800`.
    #[arg(long, value_name = "BUCKET=MS", value_parser = parse_bucket_latency)]
    bucket_latency_ms: Vec<(Resource, u64)>,
    /// Probability that a request answers a 5xx (seeded).
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    error_rate: f64,
    /// Probability that a request hangs for 60 s and then answers 504 (seeded).
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    timeout_rate: f64,
    /// Probability that a served answer's body is cut off halfway and the connection closed
    /// (seeded; the request still counts against the quota).
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    cut_rate: f64,
    /// Probability that a served answer's body stalls halfway for --stall-ms (seeded).
    #[arg(long, default_value_t = 0.0, value_parser = parse_probability)]
    stall_rate: f64,
    /// How long a stalled body waits before its second half, in milliseconds.
    #[arg(long, default_value_t = 2000)]
    stall_ms: u64,
    /// The first N repositories get an issue with 150 comments, a pull request with 130
    /// commits and a project with 120 items (connections deeper than one page).
    #[arg(long, default_value_t = 0)]
    deep_repos: usize,
    /// GraphQL queries that may return more than N nodes answer 502 (see --graphql-timeouts).
    #[arg(long, value_name = "N")]
    graphql_timeout_above_nodes: Option<u64>,
    /// How many such 502s are answered before the origin recovers.
    #[arg(long, default_value_t = 0)]
    graphql_timeouts: u32,
    /// Spend LOGIN's core quota from "elsewhere" at PER_MINUTE requests a minute (repeatable).
    #[arg(long = "external-spend", value_name = "LOGIN:PER_MINUTE", value_parser = parse_spend)]
    external_spend: Vec<ExternalSpend>,
    /// Make GET /rate_limit report a full quota with a reset of now + 1 h, as GitHub has been
    /// seen to do.
    #[arg(long)]
    lying_rate_limit: bool,
    /// Primary rate limits: `on` as on github.com, `off` as GitHub Enterprise Server ships (no
    /// x-ratelimit-* headers, GET /rate_limit answers 404, GraphQL rateLimit is null; the
    /// secondary limits still apply).
    #[arg(long, value_enum, default_value_t = RateLimits::On)]
    rate_limits: RateLimits,
    /// GitLab (served under /api/v4): authenticated requests per user per minute before the
    /// throttle answers 429 "Retry later".
    #[arg(long, default_value_t = 2_000, value_parser = clap::value_parser!(u64).range(1..))]
    gitlab_requests_per_minute: u64,
    /// GitLab: the length of its windows in seconds (a minute; shorten it for tests and demos,
    /// every GitLab limit counting per window).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(i64).range(1..=3_600))]
    gitlab_window_secs: i64,
    /// GitLab: play a self-managed instance, limits off: no throttle, no RateLimit-* headers.
    #[arg(long)]
    gitlab_self_managed: bool,
    /// GitLab: project creations per user per minute before the application limit answers 429
    /// while the RateLimit-* headers still show room (0: no limit).
    #[arg(long, default_value_t = 10)]
    gitlab_project_creations_per_minute: u64,
    /// GitLab: seed a group with this path (e.g. acme), served read-only under /api/v4 with
    /// its subgroups, projects, merge requests (commits, approvals, notes), pipelines (jobs),
    /// issues (notes), milestones, deployments, releases and feature flags; every token
    /// owner is a member.
    #[arg(long, value_name = "PATH")]
    gitlab_group: Option<String>,
    /// GitLab group: subgroups, nested two levels deep.
    #[arg(long, value_name = "N", default_value_t = 3, requires = "gitlab_group")]
    gitlab_subgroups: usize,
    /// GitLab group: projects in every group (the top group and each subgroup).
    #[arg(long, value_name = "N", default_value_t = 4, requires = "gitlab_group")]
    gitlab_projects: usize,
    /// GitLab group: merge requests, issues and pipelines per project (and half as many
    /// deployments; 3 milestones, 2 releases, 3 feature flags per project).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 20,
        requires = "gitlab_group"
    )]
    gitlab_items: usize,
    /// GitLab group scenario: the feature flags API answers 403 on the first and every N-th
    /// project (1: on all of them; 0: never).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "gitlab_group")]
    gitlab_flags_forbidden_every: usize,
    /// GitLab group scenario: N projects are deleted right after a group projects listing
    /// served them; from then on they and their sub-resources answer 404 Project Not Found.
    #[arg(long, value_name = "N", default_value_t = 0, requires = "gitlab_group")]
    gitlab_deleted_projects: usize,
    /// GitLab group scenario: every N-th page a group listing serves is sent only after
    /// 60 s, so a client with a shorter timeout gives up on a page already served (0: never).
    #[arg(long, value_name = "N", default_value_t = 0, requires = "gitlab_group")]
    gitlab_stall_page_every: usize,
    /// GitLab group: the largest offset (page × per_page) served on project issues, which
    /// also offer keyset pagination; past it offset paging answers 405 (0: no limit).
    #[arg(
        long,
        value_name = "N",
        default_value_t = 50_000,
        requires = "gitlab_group"
    )]
    gitlab_max_offset: usize,
    /// GitLab: per-user per-minute limits of GET /groups/:id, GET /projects/:id and GET
    /// /groups/:id/projects, refused with 429 and Retry-After but no RateLimit-* headers (0
    /// turns one off). Default: GitLab.com's 400,400,600, or none with --gitlab-self-managed.
    #[arg(long, value_name = "GROUP,PROJECT,GROUP_PROJECTS", value_parser = parse_endpoint_limits)]
    gitlab_endpoint_limits: Option<GitlabEndpointLimits>,
    #[command(flatten)]
    jira: jira_args::JiraArgs,
    #[command(flatten)]
    linear: linear_args::LinearArgs,
    #[command(flatten)]
    launchdarkly: launchdarkly_args::LaunchDarklyArgs,
    /// Serve these events as the public feed instead of the scenario's: a JSON array or one
    /// envelope per line (a corpus file, a GH Archive hour), newest first, capped at 300.
    #[arg(long, value_name = "FILE")]
    feed_file: Option<PathBuf>,
    /// Replay --feed-file over this many seconds from the start: each event surfaces when its
    /// offset in the recording, scaled to the span, has passed (an hour of GH Archive as a
    /// feed hour in a minute). Without it the whole file is reachable at once.
    #[arg(long, value_name = "SECS", requires = "feed_file", value_parser = clap::value_parser!(u64).range(1..))]
    feed_replay_secs: Option<u64>,
    /// `/events`' `X-Poll-Interval`: the fewest seconds a poller should leave between polls.
    #[arg(long, value_name = "SECS", default_value_t = 60)]
    poll_interval_secs: u64,
    /// Append one JSON line per request to FILE.
    #[arg(long, value_name = "FILE")]
    log: Option<PathBuf>,
    /// Serve HTTPS: with --tls-cert/--tls-key, or a generated self-signed pair written to
    /// --tls-dir.
    #[arg(long)]
    tls: bool,
    /// Certificate chain (PEM) for --tls.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,
    /// Private key (PEM) for --tls.
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,
    /// Where --tls writes a generated self-signed cert.pem and key.pem (default: a new
    /// directory under the system's temporary directory).
    #[arg(long, value_name = "DIR")]
    tls_dir: Option<PathBuf>,
}

/// `--rate-limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum RateLimits {
    /// github.com.
    On,
    /// GitHub Enterprise Server's default.
    Off,
}

impl SimArgs {
    fn config(&self) -> SimConfig {
        let mut c = SimConfig::default()
            .with_scenario(self.scenario)
            .with_org(self.org.clone(), self.repos)
            .with_seed(self.seed)
            .with_window(SignedDuration::from_secs(
                i64::try_from(self.window_secs).unwrap_or(3_600),
            ));
        c.tokens = self.tokens.clone();
        c.core_limit = self.core_limit;
        c.search_limit = self.search_limit;
        c.graphql_limit = self.graphql_limit;
        c.concurrency_limit = self.concurrency_limit;
        c.external_spend = self.external_spend.clone();
        c.lying_rate_limit = self.lying_rate_limit;
        c.rate_limiting = self.rate_limits == RateLimits::On;
        c.gitlab_requests_per_minute = self.gitlab_requests_per_minute;
        c.gitlab_window_secs = self.gitlab_window_secs;
        c.gitlab_self_managed = self.gitlab_self_managed;
        c.gitlab_project_creations_per_minute = self.gitlab_project_creations_per_minute;
        c.gitlab_endpoint_limits = self.gitlab_endpoint_limits;
        c.jira_site = self.jira.spec(self.seed);
        c.linear_workspace = self.linear.spec();
        c.launchdarkly_account = self.launchdarkly.spec();
        c.gitlab_group = self.gitlab_group.as_ref().map(|path| {
            let mut spec = GitlabGroupSpec::new(path.clone())
                .with_subgroups(self.gitlab_subgroups, 2)
                .with_projects_per_group(self.gitlab_projects)
                .with_items(self.gitlab_items);
            spec.feature_flags_forbidden_every = self.gitlab_flags_forbidden_every;
            spec.deleted_after_listing = self.gitlab_deleted_projects;
            spec.stall_page_every = self.gitlab_stall_page_every;
            spec.max_offset = self.gitlab_max_offset;
            spec
        });
        c.log_file = self.log.clone();
        c.poll_interval_secs = self.poll_interval_secs;
        let ms = |v: u64| SignedDuration::from_millis(i64::try_from(v).unwrap_or(i64::MAX));
        c.faults.latency = ms(self.latency_ms);
        c.faults.latency_jitter = ms(self.latency_jitter_ms);
        c.faults.bucket_latency = self
            .bucket_latency_ms
            .iter()
            .map(|&(bucket, latency)| (bucket, ms(latency)))
            .collect();
        c.faults.error_rate = self.error_rate;
        c.faults.timeout_rate = self.timeout_rate;
        c.faults.cut_rate = self.cut_rate;
        c.faults.stall_rate = self.stall_rate;
        c.faults.stall_for = ms(self.stall_ms);
        c.faults.graphql_timeout_above_nodes = self.graphql_timeout_above_nodes;
        c.faults.graphql_timeouts = self.graphql_timeouts;
        c.deep_repos = self.deep_repos;
        c.feed_replay = self
            .feed_replay_secs
            .map(|secs| SignedDuration::from_secs(i64::try_from(secs).unwrap_or(i64::MAX)));
        c
    }
}

/// Runs `headroom sim`. Its messages go out under the program name `headroom sim`; a
/// refusal says so in its text, as the simulator's validation reads.
pub fn run(args: SimArgs) -> CommandResult {
    if let Err(e) = args.config().validate() {
        return Err(CliError::Refused(format!("refused: {e}")));
    }
    if !args.addr.ip().is_loopback() {
        return Err(CliError::Refused(format!(
            "refused: --addr {} is not a loopback address",
            args.addr
        )));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .map_err(|e| CliError::Failed(format!("cannot start the runtime: {e}")))?;
    let announce = |line: String| {
        let mut out = std::io::stdout().lock();
        // The first stdout line is a contract: later tooling reads the address from it.
        let _ = writeln!(out, "{line}").and_then(|()| out.flush());
    };
    match runtime.block_on(serve_until(
        args,
        announce,
        crate::signals::stop_requested(),
    )) {
        Ok(()) => Ok(Outcome::Success),
        Err(e) => Err(CliError::Failed(format!("{e:#}"))),
    }
}

/// Binds, announces `listening on SCHEME://ADDR` through `announce`, and serves until
/// `shutdown` completes.
async fn serve_until(
    args: SimArgs,
    announce: impl FnOnce(String),
    shutdown: impl std::future::Future<Output = ()> + Send,
) -> anyhow::Result<()> {
    let mut config = args.config();
    if let Some(path) = &args.feed_file {
        config.feed_events = Some(std::sync::Arc::new(read_feed(path)?));
    }
    let tls = if args.tls {
        match (&args.tls_cert, &args.tls_key) {
            (Some(cert), Some(key)) => Some(TlsConfig::from_pem_files(cert, key)?),
            _ => {
                let dir = match &args.tls_dir {
                    Some(d) => d.clone(),
                    None => std::env::temp_dir()
                        .join(format!("headroom-sim-tls-{}", std::process::id())),
                };
                std::fs::create_dir_all(&dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let generated = TlsConfig::self_signed(&dir)?;
                eprintln!(
                    "headroom sim: self-signed certificate {} (trust it as a CA), key {}",
                    generated.cert_path.display(),
                    generated.key_path.display()
                );
                Some(generated.tls)
            }
        }
    } else {
        None
    };
    let sim = Simulator::new(config, TokioClock::system())?;
    let listener = tokio::net::TcpListener::bind(args.addr)
        .await
        .with_context(|| format!("binding {}", args.addr))?;
    let local = listener.local_addr().context("reading the bound address")?;
    let scheme = if tls.is_some() { "https" } else { "http" };
    announce(format!("listening on {scheme}://{local}"));
    serve(sim, listener, tls, shutdown).await?;
    Ok(())
}

/// Reads a feed file: a JSON array of envelopes, or one envelope per line.
fn read_feed(path: &std::path::Path) -> anyhow::Result<Vec<serde_json::Value>> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    if let Ok(serde_json::Value::Array(events)) = serde_json::from_str(&text) {
        return Ok(events);
    }
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, l)| {
            serde_json::from_str(l)
                .with_context(|| format!("{} line {}: not a JSON event", path.display(), i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::{CommandFactory, Parser};
    use std::io::Read;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: SimArgs,
    }

    fn parse(argv: &[&str]) -> Result<SimArgs, clap::Error> {
        let mut full = vec!["sim"];
        full.extend_from_slice(argv);
        Cli::try_parse_from(full).map(|c| c.args)
    }

    #[test]
    fn defaults_are_githubs_numbers() {
        let a = parse(&[]).expect("no flags is valid");
        let c = a.config();
        assert_eq!(a.addr.to_string(), "127.0.0.1:0");
        assert_eq!((c.core_limit, c.unauthenticated_core_limit), (5_000, 60));
        assert_eq!((c.search_limit, c.unauthenticated_search_limit), (30, 10));
        assert_eq!((c.graphql_limit, c.concurrency_limit), (5_000, 100));
        assert_eq!(c.window, SignedDuration::from_secs(3_600));
        assert_eq!(c.scenario, Scenario::Default);
        assert!(c.rate_limiting);
    }

    #[test]
    fn the_gitlab_settings_parse() {
        let c = parse(&[]).expect("valid").config();
        assert_eq!(c.gitlab_requests_per_minute, 2_000);
        assert!(!c.gitlab_self_managed);
        assert_eq!(c.gitlab_project_creations_per_minute, 10);
        let c = parse(&[
            "--gitlab-requests-per-minute",
            "5",
            "--gitlab-self-managed",
            "--gitlab-project-creations-per-minute",
            "0",
        ])
        .expect("valid")
        .config();
        assert_eq!(c.gitlab_requests_per_minute, 5);
        assert!(c.gitlab_self_managed);
        assert_eq!(c.gitlab_project_creations_per_minute, 0);
        assert!(parse(&["--gitlab-requests-per-minute", "0"]).is_err());
    }

    #[test]
    fn the_gitlab_group_flags_seed_the_group_they_name() {
        let c = parse(&[]).expect("valid").config();
        assert!(c.gitlab_group.is_none());
        assert!(c.gitlab_endpoint_limits.is_none());
        let c = parse(&[
            "--gitlab-group",
            "acme",
            "--gitlab-subgroups",
            "5",
            "--gitlab-projects",
            "7",
            "--gitlab-items",
            "9",
            "--gitlab-flags-forbidden-every",
            "2",
            "--gitlab-deleted-projects",
            "1",
            "--gitlab-endpoint-limits",
            "4,5,6",
            "--gitlab-stall-page-every",
            "3",
            "--gitlab-max-offset",
            "150",
        ])
        .expect("valid")
        .config();
        let g = c.gitlab_group.expect("a group");
        assert_eq!(
            (g.path.as_str(), g.subgroups, g.projects_per_group),
            ("acme", 5, 7)
        );
        assert_eq!((g.merge_requests_per_project, g.issues_per_project), (9, 9));
        assert_eq!(
            (g.feature_flags_forbidden_every, g.deleted_after_listing),
            (2, 1)
        );
        assert_eq!((g.stall_page_every, g.max_offset), (3, 150));
        let l = c.gitlab_endpoint_limits.expect("limits");
        assert_eq!(
            (
                l.group_per_minute,
                l.project_per_minute,
                l.group_projects_per_minute
            ),
            (4, 5, 6)
        );
        assert!(
            parse(&["--gitlab-subgroups", "2"]).is_err(),
            "needs --gitlab-group"
        );
        assert!(parse(&["--gitlab-endpoint-limits", "4,5"]).is_err());
        let bad = parse(&["--gitlab-group", "a/b"]).expect("parses").config();
        assert!(bad.validate().is_err());
    }

    #[test]
    fn rate_limits_can_be_turned_off_as_on_enterprise_server() {
        assert!(
            !parse(&["--rate-limits", "off"])
                .expect("valid")
                .config()
                .rate_limiting
        );
        assert!(
            parse(&["--rate-limits", "on"])
                .expect("valid")
                .config()
                .rate_limiting
        );
        assert!(parse(&["--rate-limits", "maybe"]).is_err());
    }

    #[test]
    fn the_contract_flags_parse() {
        let a = parse(&[
            "--addr",
            "127.0.0.1:8088",
            "--scenario",
            "hostile_redirect",
            "--org",
            "acme",
            "--repos",
            "125",
            "--seed",
            "7",
            "--token",
            "t1=alice",
            "--token",
            "t2=alice",
            "--token",
            "ghs_x=installation:42",
            "--core-limit",
            "100",
            "--search-limit",
            "5",
            "--graphql-limit",
            "50",
            "--window-secs",
            "60",
            "--concurrency-limit",
            "4",
            "--latency-ms",
            "20",
            "--external-spend",
            "alice:120",
            "--lying-rate-limit",
            "--log",
            "/tmp/x.jsonl",
            "--tls",
        ])
        .expect("valid");
        let c = a.config();
        assert_eq!(c.scenario, Scenario::HostileRedirect);
        assert_eq!((c.repos, c.seed), (125, 7));
        assert_eq!(c.tokens.len(), 3);
        assert_eq!(c.tokens[2], TokenSpec::installation("ghs_x", 42));
        assert_eq!(c.window, SignedDuration::from_secs(60));
        assert_eq!(c.search_window, SignedDuration::from_secs(60));
        assert_eq!(c.external_spend[0].per_minute, 120.0);
        assert!(c.lying_rate_limit && a.tls);
        assert_eq!(c.faults.latency, SignedDuration::from_millis(20));
    }

    #[test]
    fn bucket_latencies_parse_and_bad_ones_are_refused() {
        let c = parse(&[
            "--bucket-latency-ms",
            "graphql=800",
            "--bucket-latency-ms",
            "core=150",
        ])
        .expect("valid")
        .config();
        assert_eq!(
            c.faults.bucket_latency.get(&Resource::Graphql),
            Some(&SignedDuration::from_millis(800))
        );
        assert_eq!(
            c.faults.bucket_latency.get(&Resource::Core),
            Some(&SignedDuration::from_millis(150))
        );
        assert_eq!(c.faults.bucket_latency.get(&Resource::Search), None);
        for bad in ["graphql", "rest=10", "graphql=fast", "core=-5"] {
            let err = parse(&["--bucket-latency-ms", bad]).expect_err(bad);
            assert!(
                err.to_string().contains("bucket-latency-ms"),
                "{bad}: {err}"
            );
        }
    }

    #[test]
    fn the_depth_and_graphql_timeout_flags_parse() {
        let c = parse(&[
            "--deep-repos",
            "2",
            "--graphql-timeout-above-nodes",
            "3100",
            "--graphql-timeouts",
            "4",
        ])
        .expect("valid")
        .config();
        assert_eq!(c.deep_repos, 2);
        assert_eq!(c.faults.graphql_timeout_above_nodes, Some(3_100));
        assert_eq!(c.faults.graphql_timeouts, 4);
        let plain = parse(&[]).expect("valid").config();
        assert_eq!(plain.deep_repos, 0);
        assert_eq!(plain.faults.graphql_timeout_above_nodes, None);
    }

    #[test]
    fn invalid_values_are_refused_with_the_flag_named_and_exit_code_2() {
        for (argv, flag) in [
            (vec!["--token", "abc"], "--token"),
            (vec!["--scenario", "nope"], "--scenario"),
            (vec!["--external-spend", "alice"], "--external-spend"),
            (vec!["--external-spend", "alice:fast"], "--external-spend"),
            (vec!["--window-secs", "0"], "--window-secs"),
            (vec!["--error-rate", "2"], "--error-rate"),
            (vec!["--tls-cert", "c.pem"], "--tls-key"),
        ] {
            let e = parse(&argv).expect_err("refused");
            assert_eq!(e.exit_code(), 2, "{argv:?}");
            assert!(e.to_string().contains(flag), "{argv:?}: {e}");
        }
    }

    #[test]
    fn feed_files_are_json_arrays_or_json_lines() {
        let dir = std::env::temp_dir().join(format!("headroom-sim-feed-{}", std::process::id()));
        std::fs::create_dir_all(&dir).expect("temp dir");
        let array = dir.join("a.json");
        std::fs::write(&array, r#"[{"id":"1","type":"PushEvent"},{"id":"2"}]"#).expect("write");
        assert_eq!(read_feed(&array).expect("array").len(), 2);
        let lines = dir.join("b.jsonl");
        std::fs::write(&lines, "{\"id\":\"1\"}\n\n{\"id\":\"2\"}\n{\"id\":\"3\"}\n")
            .expect("write");
        assert_eq!(read_feed(&lines).expect("lines").len(), 3);
        let broken = dir.join("c.jsonl");
        std::fs::write(&broken, "{\"id\":\"1\"}\nnot json\n").expect("write");
        let e = read_feed(&broken).expect_err("refused");
        assert!(format!("{e:#}").contains("line 2"), "{e:#}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn help_lists_every_scenario_with_one_line_each() {
        let help = Cli::command().render_long_help().to_string();
        for s in Scenario::ALL {
            let line = help
                .lines()
                .find(|l| l.trim_start().starts_with(&format!("{} ", s.name())))
                .unwrap_or_else(|| panic!("{} is missing from --help", s.name()));
            assert!(line.contains(s.description()), "{line}");
        }
    }

    #[test]
    fn announces_the_address_first_then_serves() {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async {
            let args = parse(&["--token", "t1=alice", "--repos", "2"]).expect("valid");
            let (line_tx, line_rx) = tokio::sync::oneshot::channel::<String>();
            let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
            let server = tokio::spawn(serve_until(
                args,
                move |line| {
                    let _ = line_tx.send(line);
                },
                async {
                    let _ = stop_rx.await;
                },
            ));
            let line = line_rx.await.expect("announced");
            let addr = line
                .strip_prefix("listening on http://127.0.0.1:")
                .expect("the contract's first line");
            let port: u16 = addr.parse().expect("a port");
            let body = tokio::task::spawn_blocking(move || {
                let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
                s.write_all(b"GET /user HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: token t1\r\nConnection: close\r\n\r\n")
                    .expect("write");
                let mut out = String::new();
                s.read_to_string(&mut out).expect("read");
                out
            })
            .await
            .expect("joined");
            assert!(body.starts_with("HTTP/1.1 200"), "{body}");
            assert!(body.contains("\"login\":\"alice\""), "{body}");
            let _ = stop_tx.send(());
            server.await.expect("joined").expect("served");
        });
    }
}
