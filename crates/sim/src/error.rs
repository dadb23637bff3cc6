//! The simulator's error type.

use std::path::PathBuf;

/// Everything that can go wrong setting up or serving the simulator. Request-level problems
/// are never errors: they are HTTP responses, like GitHub's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum SimError {
    /// `--scenario` named nothing the simulator knows.
    #[error("unknown scenario {0:?} (see --help for the list)")]
    UnknownScenario(String),
    /// A `--token` value was not `TOKEN=LOGIN`.
    #[error("invalid token mapping {0:?}: expected TOKEN=LOGIN (or TOKEN=installation:ID)")]
    InvalidToken(String),
    /// An `--external-spend` value was not `LOGIN:PER_MINUTE`.
    #[error("invalid external spend {0:?}: expected LOGIN:PER_MINUTE")]
    InvalidExternalSpend(String),
    /// A configuration value that cannot work (a zero window, a zero limit …).
    #[error("invalid configuration: {0}")]
    InvalidConfig(String),
    /// Reading or writing a file (certificate, key, log).
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// Building the TLS configuration or a certificate failed.
    #[error("TLS: {0}")]
    Tls(String),
}
