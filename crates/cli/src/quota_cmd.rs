//! `headroom quota show`: whose quota a credential spends, and what is left of it — read from
//! response headers, never from `/rate_limit` (which has been seen to report a full quota
//! while the headers said otherwise).

use clap::{Args, Subcommand};
use headroom_core::Subject;
use headroom_core::clock::{Clock, TokioClock};
use headroom_core::governor::{GovernorConfig, IdentitySnapshot, LimitReporting};
use headroom_core::signal::Provider;
use headroom_http::{ApiError, ApiRequest};
use serde::Serialize;

use crate::config::{GlobalArgs, ProcessEnv};
use crate::outcome::{CliError, CommandResult, Outcome, TokenFor};
use crate::{registry, wiring};

/// Quota commands.
#[derive(Debug, Args)]
pub struct QuotaArgs {
    #[command(subcommand)]
    command: QuotaCommand,
}

#[derive(Debug, Subcommand)]
enum QuotaCommand {
    /// Discover the credential's owner, make one cheap request, and print every bucket seen
    /// and which stored credentials share the quota.
    Show {
        /// Whose API: GitHub's (`--api-url`, `GITHUB_TOKEN`), GitLab's (`[gitlab]`,
        /// `GITLAB_TOKEN`; `--api-url` and `--token-file` then name GitLab's), Jira's (`[jira]`,
        /// `JIRA_EMAIL` and `JIRA_API_TOKEN`; `--api-url` names the site) or Linear's
        /// (`[linear]`, `LINEAR_API_KEY`; `--api-url` and `--token-file` name Linear's).
        #[arg(long, value_enum, default_value_t = ShownProvider::Github)]
        provider: ShownProvider,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Send many cheap reads at once through the governor and report what it did with them:
    /// how many went out, how many it deferred, and what the provider answered. A way to watch
    /// the governor hold a quota (against the simulator, or a test deployment).
    Probe {
        /// Reads to attempt.
        #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u32).range(1..=100_000))]
        requests: u32,
        /// Reads in flight at once (the governor's ceiling still applies).
        #[arg(long, default_value_t = 25, value_parser = clap::value_parser!(u32).range(1..=1_000))]
        concurrency: u32,
        /// The path to read (default: /user with a token, /events?per_page=1 without).
        #[arg(long)]
        path: Option<String>,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
}

/// The providers `quota show` speaks to today.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
enum ShownProvider {
    Github,
    Gitlab,
    Jira,
    Linear,
    Launchdarkly,
}

impl ShownProvider {
    fn provider(self) -> Provider {
        match self {
            ShownProvider::Github => Provider::GitHub,
            ShownProvider::Gitlab => Provider::GitLab,
            ShownProvider::Jira => Provider::Jira,
            ShownProvider::Linear => Provider::Linear,
            ShownProvider::Launchdarkly => Provider::LaunchDarkly,
        }
    }
}

/// What a probe saw.
#[derive(Debug, Default, Serialize)]
struct ProbeReport {
    attempted: u64,
    ok: u64,
    deferred: u64,
    failed: std::collections::BTreeMap<String, u64>,
}

#[derive(Debug, Serialize)]
struct Report {
    /// Whose API (`github`, `gitlab`, `jira`, `linear`).
    provider: &'static str,
    identity: String,
    host: String,
    authenticated: bool,
    credential_fingerprint: Option<String>,
    credentials_sharing: Vec<String>,
    snapshot: IdentitySnapshot,
    /// The newest reading of each of the identity's buckets that any headroom process on this
    /// database recorded, with in flight summed over the live ones.
    recorded: Vec<headroom_store::quota_history::BucketNow>,
}

/// How recent a process's reading must be for its in flight to count.
const LIVE_WINDOW: headroom_core::clock::SignedDuration =
    headroom_core::clock::SignedDuration::from_secs(30);

/// The settings `quota show` speaks to `provider` with: its own API and token (GitHub's never
/// reach another provider's host), and where the token came from, in words.
fn provider_settings(
    global: &GlobalArgs,
    provider: Provider,
) -> Result<(crate::config::Settings, Option<String>), CliError> {
    let mut settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    match provider {
        Provider::GitLab => {
            let access = crate::op_cmd::access_for(provider, global, &settings);
            settings.policy = access.policy;
            settings.credential = access.credential;
            Ok((settings, access.source))
        }
        Provider::Jira => {
            crate::sync_cmd::provider_settings(global, settings, crate::sync_cmd::SyncKind::Jira)
        }
        Provider::Linear => {
            crate::sync_cmd::provider_settings(global, settings, crate::sync_cmd::SyncKind::Linear)
        }
        Provider::LaunchDarkly => crate::sync_cmd::provider_settings(
            global,
            settings,
            crate::sync_cmd::SyncKind::LaunchDarkly,
        ),
        _ => Ok((settings, None)),
    }
}

/// One cheap request whose headers tell the truth about the core bucket, if one is needed:
/// Linear's and LaunchDarkly's answers to who-am-i already carried every bucket's reading.
fn probe_path(provider: Provider, authenticated: bool) -> Option<&'static str> {
    match (provider, authenticated) {
        (Provider::Linear | Provider::LaunchDarkly, _) => None,
        (Provider::Jira, _) => Some("/rest/api/3/myself"),
        (_, true) => Some("/user"),
        (Provider::GitLab, false) => Some("/projects?per_page=1"),
        (_, false) => Some("/events?per_page=1"),
    }
}

/// Whose quota it is, as the report's sentence says it ("alice's", "account 42's").
fn owner_label(subject: &Subject) -> String {
    match subject {
        Subject::User(login) => format!("{login}'s"),
        Subject::Installation(id) => format!("installation {id}'s"),
        Subject::Ip(ip) => format!("the unauthenticated ({ip})"),
        Subject::Account(id) => format!("account {id}'s"),
        Subject::Site(host) => format!("site {host}'s"),
        Subject::App(id) => format!("app {id}'s"),
    }
}

/// Runs `headroom quota …`.
pub async fn run(global: &GlobalArgs, args: QuotaArgs) -> CommandResult {
    let (provider, json) = match args.command {
        QuotaCommand::Show { provider, json } => (provider.provider(), json),
        QuotaCommand::Probe {
            requests,
            concurrency,
            path,
            json,
        } => return probe(global, requests, concurrency, path, json).await,
    };
    let (settings, source) = provider_settings(global, provider)?;
    // A refused token is the provider's to replace, named as its own (main's hint names
    // GitHub's).
    let hinted = |e: CliError| match provider {
        Provider::GitLab => e.with_hints(TokenFor::GitLab, || source.clone()),
        Provider::Jira => e.with_hints(TokenFor::Jira, || source.clone()),
        Provider::Linear => e.with_hints(TokenFor::Linear, || source.clone()),
        Provider::LaunchDarkly => e.with_hints(TokenFor::LaunchDarkly, || source.clone()),
        _ => e,
    };
    let opened = registry::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let clock = TokioClock::system();
    let client = wiring::client_for(
        &settings,
        clock,
        &opened,
        GovernorConfig::default().margin,
        provider,
    )
    .map_err(|e| CliError::refused(&e))?;
    let credential = settings.credential.as_ref();
    let key = match client.identity(credential).await {
        Ok(key) => key,
        // The quota is spent before the owner is known: what is known is reported (issue 36,
        // item 4), and that is a report, not a failure.
        Err(ApiError::RateLimited {
            until,
            bucket,
            reason,
            ..
        }) => {
            let spent = Spent::of(&client, credential, until, bucket.as_str(), &reason);
            return spent.print(json, clock.now());
        }
        Err(e) => return Err(hinted(CliError::failed(&e))),
    };
    if let Some(probe) = probe_path(provider, credential.is_some()) {
        match client
            .send(
                ApiRequest::get(probe)
                    .credential(credential)
                    .route(headroom_core::route::QUOTA_PROBE),
            )
            .await
        {
            Ok(_) | Err(ApiError::RateLimited { .. }) => {}
            Err(e) => return Err(hinted(CliError::failed(&e))),
        }
    }
    let snapshot = client
        .governor()
        .snapshot(&key)
        .await
        .map_err(|e| CliError::failed(&e))?;
    let sharing = client.credentials().sharing(&key.host, &key.subject).await;
    // This process's reading first, so what it just saw is in the database's picture too.
    client.flush_readings().await;
    let subject = headroom_store::subject_label(&key.subject);
    let recorded: Vec<_> = opened
        .history
        .latest_quota_readings(clock.now() - LIVE_WINDOW)
        .await
        .map_err(|e| CliError::failed(&e))?
        .into_iter()
        .filter(|b| {
            b.latest.reading.host == key.host.to_string()
                && b.latest.reading.subject == subject
                && b.latest.reading.provider == headroom_store::provider_name(key.provider)
        })
        .collect();
    let owner = owner_label(&key.subject);
    let report = Report {
        provider: headroom_store::provider_name(key.provider),
        identity: key.subject.to_string(),
        host: key.host.to_string(),
        authenticated: credential.is_some(),
        credential_fingerprint: credential.map(|c| c.fingerprint().to_owned()),
        credentials_sharing: sharing.clone(),
        snapshot,
        recorded,
    };
    if json {
        match serde_json::to_string_pretty(&report) {
            Ok(text) => outln!("{text}"),
            Err(e) => return Err(CliError::failed(&e)),
        }
        return Ok(Outcome::Success);
    }
    print_report(&report, &owner, credential.is_some(), clock.now());
    Ok(Outcome::Success)
}

/// What `quota show` can say when the quota is spent before its owner is known: the owner is
/// learned with `GET /user`, which the spent quota holds back.
#[derive(Debug, Serialize)]
struct Spent {
    identity: Option<String>,
    host: String,
    authenticated: bool,
    credential_fingerprint: Option<String>,
    bucket: String,
    remaining: Option<u64>,
    /// When the provider's window reopens.
    reset_at: headroom_core::clock::Timestamp,
    reason: String,
}

impl Spent {
    fn of(
        client: &headroom_http::Client,
        credential: Option<&headroom_http::Credential>,
        until: headroom_core::clock::Timestamp,
        bucket: &str,
        reason: &headroom_http::RateLimitReason,
    ) -> Self {
        // The provider's reset when the governor read one; else the earliest retry.
        let (remaining, reset_at) = match reason.wait_reason() {
            Some(headroom_core::governor::WaitReason::Exhausted {
                remaining,
                reset_at,
                ..
            }) => (Some(*remaining), *reset_at),
            _ => (None, until),
        };
        Self {
            identity: None,
            host: client.policy().host().to_owned(),
            authenticated: credential.is_some(),
            credential_fingerprint: credential.map(|c| c.fingerprint().to_owned()),
            bucket: bucket.to_owned(),
            remaining,
            reset_at,
            reason: reason.to_string(),
        }
    }

    fn print(&self, json: bool, now: headroom_core::clock::Timestamp) -> CommandResult {
        if json {
            match serde_json::to_string_pretty(self) {
                Ok(text) => outln!("{text}"),
                Err(e) => return Err(CliError::failed(&e)),
            }
            return Ok(Outcome::Success);
        }
        for line in self.lines(now) {
            outln!("{line}");
        }
        Ok(Outcome::Success)
    }

    fn lines(&self, now: headroom_core::clock::Timestamp) -> Vec<String> {
        let who = match &self.credential_fingerprint {
            Some(f) => format!("the token {f}"),
            None => "the unauthenticated quota".to_owned(),
        };
        let secs = self.reset_at.duration_since(now).as_secs().max(0);
        vec![
            format!("{who} on {}: its {} quota is spent", self.host, self.bucket),
            format!(
                "  {:<12} {} left · reopens {} (in {}m{:02}s)",
                self.bucket,
                self.remaining.map_or("none".to_owned(), |r| r.to_string()),
                self.reset_at.strftime("%H:%M:%S UTC"),
                secs / 60,
                secs % 60
            ),
            "  whose quota it is is learned with GET /user once it reopens".to_owned(),
        ]
    }
}

/// `quota show`'s text: the probe's buckets, what every process recorded, who shares it.
fn print_report(
    report: &Report,
    owner: &str,
    authenticated: bool,
    now: headroom_core::clock::Timestamp,
) {
    match report.provider {
        "github" => outln!("{} on {}", report.identity, report.host),
        provider => outln!("{} on {} ({provider})", report.identity, report.host),
    }

    for bucket in &report.snapshot.buckets {
        let b = &bucket.state;
        let remaining = b.remaining.map_or("?".to_owned(), |r| r.to_string());
        let limit = b.limit.map_or("?".to_owned(), |l| l.to_string());
        let reset = b.reset_at.map_or("unknown".to_owned(), |r| {
            let secs = r.duration_since(now).as_secs().max(0);
            format!(
                "{} (in {}m{:02}s)",
                r.strftime("%H:%M:%S UTC"),
                secs / 60,
                secs % 60
            )
        });
        let blocked = b
            .blocked_until
            .filter(|u| *u > now)
            .map(|u| format!(" · blocked until {}", u.strftime("%H:%M:%S UTC")))
            .unwrap_or_default();
        if bucket.limits == LimitReporting::NotReported {
            // Enterprise Server ships with rate limiting off: the governor keeps the bucket
            // unknown (the in-flight ceiling bounds it) and its secondary protections.
            outln!(
                "  {}: no rate-limit headers — limits are off on this server (the default of GitHub Enterprise Server and self-managed GitLab); local limits still apply · {} in flight{blocked}",
                b.bucket.as_str(),
                b.in_flight
            );
            continue;
        }
        outln!(
            "  {:<12} {remaining} / {limit} · resets {reset} · {} in flight{blocked}",
            b.bucket.as_str(),
            b.in_flight
        );
    }
    if !report.recorded.is_empty() {
        outln!("Recorded by every headroom process on this database:");
        for bucket in &report.recorded {
            let r = &bucket.latest.reading;
            let left = match (r.remaining, r.limit) {
                (None, None) => "no rate-limit headers".to_owned(),
                (remaining, limit) => format!(
                    "{} / {}",
                    remaining.map_or("?".to_owned(), |v| v.to_string()),
                    limit.map_or("?".to_owned(), |v| v.to_string())
                ),
            };
            outln!(
                "  {:<12} {left} · {} in flight over {} live process{} · read {}",
                r.bucket,
                bucket.in_flight,
                bucket.live_processes,
                if bucket.live_processes == 1 { "" } else { "es" },
                r.observed_at.strftime("%H:%M:%S UTC")
            );
        }
    }
    if report.credentials_sharing.len() >= 2 {
        outln!(
            "{} credentials share {owner} quota on {}",
            report.credentials_sharing.len(),
            report.host
        );
    } else if authenticated {
        outln!("1 credential known for {owner} quota on {}", report.host);
    }
}

/// A probe's text: the counts, and what failed how only when something did.
fn probe_line(report: &ProbeReport) -> String {
    let failed: u64 = report.failed.values().sum();
    let kinds: Vec<String> = report
        .failed
        .iter()
        .map(|(kind, n)| format!("{kind} {n}"))
        .collect();
    format!(
        "{} reads: {} answered, {} deferred by the governor, {failed} failed{}",
        report.attempted,
        report.ok,
        report.deferred,
        if kinds.is_empty() {
            String::new()
        } else {
            format!(" ({})", kinds.join(", "))
        }
    )
}

/// Longest governor wait a probe spends in place (the in-flight ceiling's short waits);
/// anything longer is a deferral and is counted, not slept on.
const IN_PLACE_WAIT_SECS: i64 = 5;

async fn probe(
    global: &GlobalArgs,
    requests: u32,
    concurrency: u32,
    path: Option<String>,
    json: bool,
) -> CommandResult {
    let settings = global
        .resolve(&ProcessEnv)
        .map_err(|e| CliError::refused(&e))?;
    let opened = registry::open(&settings.db)
        .await
        .map_err(|e| CliError::refused(&e))?;
    let clock = TokioClock::system();
    let client = wiring::client(&settings, clock, &opened).map_err(|e| CliError::refused(&e))?;
    let credential = settings.credential.clone();
    if let Err(e) = client.identity(credential.as_ref()).await {
        return Err(CliError::failed(&e));
    }
    let path = path.unwrap_or_else(|| {
        if credential.is_some() {
            "/user".into()
        } else {
            "/events?per_page=1".into()
        }
    });
    let left = std::sync::Arc::new(std::sync::atomic::AtomicU32::new(requests));
    let report = std::sync::Arc::new(std::sync::Mutex::new(ProbeReport::default()));
    let mut tasks = Vec::new();
    for _ in 0..concurrency {
        let (client, credential, path, left, report) = (
            client.clone(),
            credential.clone(),
            path.clone(),
            left.clone(),
            report.clone(),
        );
        tasks.push(tokio::spawn(async move {
            while left
                .fetch_update(
                    std::sync::atomic::Ordering::SeqCst,
                    std::sync::atomic::Ordering::SeqCst,
                    |n| n.checked_sub(1),
                )
                .is_ok()
            {
                loop {
                    let request = ApiRequest::get(path.as_str())
                        .credential(credential.as_ref())
                        .route(headroom_core::route::QUOTA_PROBE);
                    let outcome = client.send(request).await;
                    let mut r = report.lock().unwrap_or_else(|p| p.into_inner());
                    match outcome {
                        Ok(_) => {
                            r.attempted += 1;
                            r.ok += 1;
                        }
                        Err(ApiError::RateLimited { until, .. })
                            if until.duration_since(clock.now()).as_secs()
                                <= IN_PLACE_WAIT_SECS =>
                        {
                            drop(r);
                            clock.sleep_until(until).await;
                            continue;
                        }
                        Err(ApiError::RateLimited { .. }) => {
                            r.attempted += 1;
                            r.deferred += 1;
                        }
                        Err(e) => {
                            r.attempted += 1;
                            let kind = format!("{e:?}")
                                .split([' ', '{', '('])
                                .next()
                                .unwrap_or("error")
                                .to_owned();
                            *r.failed.entry(kind).or_default() += 1;
                        }
                    }
                    break;
                }
            }
        }));
    }
    for task in tasks {
        if let Err(e) = task.await {
            return Err(CliError::failed(&e));
        }
    }
    let report = std::mem::take(&mut *report.lock().unwrap_or_else(|p| p.into_inner()));
    if json {
        match serde_json::to_string(&report) {
            Ok(text) => outln!("{text}"),
            Err(e) => return Err(CliError::failed(&e)),
        }
    } else {
        outln!("{}", probe_line(&report));
    }
    if report.failed.is_empty() {
        Ok(Outcome::Success)
    } else {
        Ok(Outcome::Unsuccessful)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_probe_without_failures_prints_no_trailing_braces() {
        let mut report = ProbeReport {
            attempted: 3,
            ok: 2,
            deferred: 1,
            ..ProbeReport::default()
        };
        let line = probe_line(&report);
        assert_eq!(
            line,
            "3 reads: 2 answered, 1 deferred by the governor, 0 failed"
        );
        report.failed.insert("Timeout".into(), 2);
        assert!(
            probe_line(&report).ends_with("2 failed (Timeout 2)"),
            "{}",
            probe_line(&report)
        );
    }
}
