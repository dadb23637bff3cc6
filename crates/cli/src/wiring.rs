//! Builds the exit door from resolved settings: the governor, the live transport, and the
//! store-backed sinks. Every subcommand that talks to a provider starts here.

use std::sync::Arc;

use headroom_core::Governor;
use headroom_core::clock::TokioClock;
use headroom_core::governor::GovernorConfig;
use headroom_http::{Client, ClientParts, LiveConfig, LiveTransport};

use crate::config::{ConfigError, Settings};
use crate::registry::StoreSinks;

/// A client for `settings`, recording credential owners, ETags and usage in the store.
pub fn client(
    settings: &Settings,
    clock: TokioClock,
    sinks: Arc<StoreSinks>,
) -> Result<Client, ConfigError> {
    let governor_config = GovernorConfig {
        ceiling: settings.in_flight_ceiling,
        ..GovernorConfig::default()
    };
    let governor =
        Governor::in_memory(governor_config, Arc::new(clock)).map_err(|e| ConfigError {
            setting: "--in-flight-ceiling".into(),
            problem: e.to_string(),
        })?;
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
    parts.credentials = sinks.clone();
    parts.etags = sinks.clone();
    parts.usage = sinks;
    parts.config.request_timeout =
        headroom_core::SignedDuration::try_from(settings.connect_timeout + settings.read_timeout)
            .unwrap_or(headroom_core::SignedDuration::from_secs(20));
    Ok(Client::new(parts))
}
