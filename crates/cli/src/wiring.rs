//! Builds the exit door from resolved settings: the governor, the live transport, and the
//! store-backed sinks. Every subcommand that talks to a provider starts here.

use std::sync::Arc;

use headroom_core::clock::TokioClock;
use headroom_core::governor::{GovernorConfig, PointsLimit};
use headroom_core::signal::Provider;
use headroom_core::{Governor, SignedDuration};
use headroom_http::{Client, ClientParts, LiveConfig, LiveTransport};
use headroom_store::{ProcessMark, SharedGovernorOptions};

use crate::config::{ConfigError, Settings};
use crate::registry::Opened;

/// A client for `settings`, recording credential owners, ETags and usage in the store. The
/// governor's state lives in the database (PostgreSQL or an SQLite file), shared by every
/// process that uses it; only an in-memory database keeps it in this process.
pub fn client(
    settings: &Settings,
    clock: TokioClock,
    opened: &Opened,
) -> Result<Client, ConfigError> {
    client_with_margin(settings, clock, opened, GovernorConfig::default().margin)
}

/// [`client`], with `margin` added to every window reset before trying again (the default
/// absorbs a minute of clock skew between this machine and the provider).
pub fn client_with_margin(
    settings: &Settings,
    clock: TokioClock,
    opened: &Opened,
    margin: SignedDuration,
) -> Result<Client, ConfigError> {
    client_for(settings, clock, opened, margin, Provider::GitHub)
}

/// [`client_with_margin`] speaking `provider`'s dialect (GitLab: no GitHub API version).
pub fn client_for(
    settings: &Settings,
    clock: TokioClock,
    opened: &Opened,
    margin: SignedDuration,
    provider: Provider,
) -> Result<Client, ConfigError> {
    let mut governor_config = GovernorConfig {
        ceiling: settings.in_flight_ceiling,
        margin,
        ..GovernorConfig::for_provider(provider)
    };
    if provider == Provider::Jira {
        governor_config.endpoint_rate =
            PointsLimit::paced_per_second(settings.providers.jira_burst_per_sec);
    }
    let refused = |e: headroom_core::governor::ConfigError| ConfigError {
        setting: "--in-flight-ceiling".into(),
        problem: e.to_string(),
    };
    let request_timeout =
        SignedDuration::try_from(settings.connect_timeout + settings.read_timeout)
            .unwrap_or(SignedDuration::from_secs(20));
    let options = SharedGovernorOptions {
        // A lease must outlive the slowest request, plus slack.
        lease_ttl: request_timeout + SignedDuration::from_secs(30),
        // A mark lets a restarted process free the leases a killed one left behind.
        holder: ProcessMark::current().map_or_else(
            || format!("headroom:{}", std::process::id()),
            |m| m.to_string(),
        ),
    };
    let state = opened
        .sinks
        .store()
        .quota_state(governor_config, options)
        .map_err(refused)?;
    let governor = Governor::new(state, Arc::new(clock));
    let transport = LiveTransport::new(&LiveConfig {
        connect_timeout: settings.connect_timeout,
        read_timeout: settings.read_timeout,
        ca_bundle: settings.ca_bundle.clone(),
        ..LiveConfig::default()
    })
    .map_err(|e| ConfigError {
        setting: "--ca-bundle".into(),
        problem: e.to_string(),
    })?;
    let mut parts = ClientParts::new(
        settings.policy.clone(),
        governor,
        Arc::new(transport),
        clock,
    );
    let sinks = opened.sinks.clone();
    parts.credentials = sinks.clone();
    parts.etags = sinks.clone();
    parts.rate_limits = sinks.clone();
    parts.readings = sinks.clone();
    parts.refusals = sinks.clone();
    parts.usage = sinks;
    parts.config.request_timeout = request_timeout;
    parts.config.provider = provider;
    if provider != Provider::GitHub {
        parts.config.api_version = None;
    }
    Ok(Client::new(parts))
}

/// How long after a quota window's reset a deferred request tries again.
#[derive(Debug, Clone, clap::Args)]
pub struct ResetMargin {
    /// Seconds added to a quota window's reset before trying again: room for clock skew
    /// between this machine and the provider (against a simulator on this machine, 1 is
    /// enough).
    #[arg(long, default_value_t = 60, value_parser = clap::value_parser!(u64).range(0..=3_600))]
    reset_margin_secs: u64,
}

impl ResetMargin {
    /// The margin.
    pub fn get(&self) -> SignedDuration {
        SignedDuration::from_secs(i64::try_from(self.reset_margin_secs).unwrap_or(60))
    }
}
