//! The feed's states that are stored as text: a feed source's, a core ledger's window's, an
//! ingestion run's, an enrichment request envelope's, and an actor's or repository's
//! enrichment status and stage. Code compares the enums; the text exists only where a row is
//! read or written (and in the JSON documents, which serialize the same text).

use serde::{Deserialize, Serialize};

use crate::error::{Result, StoreError};

/// Declares a state stored as text: the enum, its stored text (`as_str`) and the parse of a
/// stored value, which reports an unknown one as a corrupt row of `column`. The column's CHECK
/// constraint lists the same texts.
macro_rules! stored_text {
    (
        $(#[$meta:meta])*
        $name:ident, column = $column:literal, what = $what:literal {
            $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )+
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, utoipa::ToSchema)]
        #[serde(rename_all = "snake_case")]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [$name] = &[$($name::$variant),+];

            /// The stored text.
            pub fn as_str(self) -> &'static str {
                match self {
                    $( Self::$variant => $text, )+
                }
            }

            /// The state a stored text names; an unknown one is a corrupt row.
            // Not every state is read back (an ingestion run's is only written).
            #[allow(dead_code)]
            pub(crate) fn parse(value: &str) -> Result<Self> {
                match value {
                    $( $text => Ok(Self::$variant), )+
                    other => Err(StoreError::corrupt(
                        $column,
                        format!(concat!("unknown ", $what, " {:?}"), other),
                    )),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

stored_text! {
    /// Whether a feed source is in service.
    SourceStatus, column = "status", what = "source status" {
        /// Polled when due.
        Idle = "idle",
        /// Out of service after a permanent 4xx, until an operator clears it.
        Failed = "failed",
    }
}

stored_text! {
    /// Where a core ledger's window stands.
    WindowStatus, column = "window_status", what = "window status" {
        /// No window seen yet, or the last one reset: the next response's headers start one.
        Uninitialized = "uninitialized",
        /// A window is open, with allowances from its headers.
        Active = "active",
        /// A rate-limit response blocked every lane until `global_blocked_until`.
        GloballyBlocked = "globally_blocked",
    }
}

stored_text! {
    /// How an ingestion run (one poll of a source) ended, or that it is still going.
    IngestionRunStatus, column = "status", what = "ingestion run status" {
        /// Started and not finished (or its process died: the reconciler closes it).
        Running = "running",
        /// Pagination stopped normally.
        Completed = "completed",
        /// The poll failed.
        Failed = "failed",
        /// A rate limit stopped it; the source waits for the block to lift.
        Deferred = "deferred",
    }
}

/// An end that does not say otherwise is a failure: only a run that completed says so.
impl Default for IngestionRunStatus {
    fn default() -> Self {
        Self::Failed
    }
}

stored_text! {
    /// What an enrichment request envelope came to.
    BatchStatus, column = "status", what = "enrichment batch status" {
        /// Sent, no answer recorded yet.
        InFlight = "in_flight",
        /// Answered; its items were applied by id.
        Succeeded = "succeeded",
        /// The request failed; its members were scheduled for retry.
        Failed = "failed",
        /// Not sent or told to stop; the members went back untouched.
        Deferred = "deferred",
        /// Its lease lapsed and the reconciler reclaimed the members.
        StaleLease = "stale_lease",
    }
}

stored_text! {
    /// Which kind of enrichment request an envelope records.
    RequestKind, column = "request_kind", what = "request kind" {
        /// A Search API batch of several members.
        Search = "search",
        /// One entity's detail endpoint (the fallback).
        Detail = "detail",
    }
}

stored_text! {
    /// What an actor's or repository's enrichment has come to.
    EnrichmentStatus, column = "enrichment_status", what = "enrichment status" {
        /// Owed enrichment, never attempted or not yet failed.
        Pending = "pending",
        /// The useful-data contract is met.
        Complete = "complete",
        /// An attempt failed; a retry is scheduled.
        RetryableFailure = "retryable_failure",
        /// An entity-specific terminal fact (404/410, or the detail ladder exhausted).
        PermanentFailure = "permanent_failure",
    }
}

impl EnrichmentStatus {
    /// Whether rows of this status are owed enrichment (the backlog).
    pub fn is_backlog(self) -> bool {
        matches!(self, Self::Pending | Self::RetryableFailure)
    }
}

stored_text! {
    /// Where an actor's or repository's row rests in the enrichment pipeline, in pipeline
    /// order.
    EnrichmentStage, column = "enrichment_stage", what = "enrichment stage" {
        /// Waiting for a Search batch.
        BatchPending = "batch_pending",
        /// Claimed into a Search batch.
        BatchInFlight = "batch_in_flight",
        /// A batch failed; waiting for its backoff to pass.
        RetryScheduled = "retry_scheduled",
        /// Admitted to the detail fallback.
        DetailPending = "detail_pending",
        /// Claimed for a detail request.
        DetailInFlight = "detail_in_flight",
        /// The useful-data contract is met.
        ContractComplete = "contract_complete",
        /// Given up on, with a reason.
        Terminal = "terminal",
    }
}

impl EnrichmentStage {
    /// Whether the row is at rest: at the contract or terminal, neither lane owes it work.
    pub fn is_settled(self) -> bool {
        matches!(self, Self::ContractComplete | Self::Terminal)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_state_reads_back_from_its_stored_text() {
        for s in EnrichmentStage::ALL {
            assert_eq!(EnrichmentStage::parse(s.as_str()).ok(), Some(*s));
        }
        for s in EnrichmentStatus::ALL {
            assert_eq!(EnrichmentStatus::parse(s.as_str()).ok(), Some(*s));
        }
        for s in BatchStatus::ALL {
            assert_eq!(BatchStatus::parse(s.as_str()).ok(), Some(*s));
        }
        for s in IngestionRunStatus::ALL {
            assert_eq!(IngestionRunStatus::parse(s.as_str()).ok(), Some(*s));
        }
        for s in RequestKind::ALL {
            assert_eq!(RequestKind::parse(s.as_str()).ok(), Some(*s));
        }
    }

    #[test]
    fn serde_writes_the_stored_text() {
        for s in EnrichmentStage::ALL {
            let json = serde_json::to_value(s).ok();
            assert_eq!(json, Some(serde_json::Value::from(s.as_str())));
        }
        let json = serde_json::to_value(EnrichmentStatus::RetryableFailure).ok();
        assert_eq!(json, Some(serde_json::Value::from("retryable_failure")));
    }

    #[test]
    fn an_unknown_stored_text_is_a_corrupt_row() {
        let err = EnrichmentStatus::parse("finished").err();
        assert!(matches!(
            err,
            Some(StoreError::Corrupt {
                column: "enrichment_status",
                ..
            })
        ));
    }
}
