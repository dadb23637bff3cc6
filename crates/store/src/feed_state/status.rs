//! The feed's states that are stored as text: a feed source's and a core ledger's window's.
//! Code compares the enums; the text exists only where a row is read or written.

use serde::Serialize;

use crate::error::{Result, StoreError};

/// Whether a feed source is in service.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SourceStatus {
    /// Polled when due.
    Idle,
    /// Out of service after a permanent 4xx, until an operator clears it.
    Failed,
}

impl SourceStatus {
    /// The stored text (the column's CHECK constraint lists the same two).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Idle => "idle",
            Self::Failed => "failed",
        }
    }

    pub(crate) fn parse(value: &str) -> Result<Self> {
        match value {
            "idle" => Ok(Self::Idle),
            "failed" => Ok(Self::Failed),
            other => Err(StoreError::corrupt(
                "status",
                format!("unknown source status {other:?}"),
            )),
        }
    }
}

/// Where a core ledger's window stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum WindowStatus {
    /// No window seen yet, or the last one reset: the next response's headers start one.
    Uninitialized,
    /// A window is open, with allowances from its headers.
    Active,
    /// A rate-limit response blocked every lane until `global_blocked_until`.
    GloballyBlocked,
}

impl WindowStatus {
    /// The stored text (the column's CHECK constraint lists the same three).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Uninitialized => "uninitialized",
            Self::Active => "active",
            Self::GloballyBlocked => "globally_blocked",
        }
    }

    pub(crate) fn parse(value: &str) -> Result<Self> {
        Ok(match value {
            "uninitialized" => Self::Uninitialized,
            "active" => Self::Active,
            "globally_blocked" => Self::GloballyBlocked,
            other => {
                return Err(StoreError::corrupt(
                    "window_status",
                    format!("unknown {other:?}"),
                ));
            }
        })
    }
}

impl std::fmt::Display for WindowStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}
