//! headroom-sync: the stage-graph runner.
//!
//! A collection is a graph of stages. Each stage declares its name, the quota bucket it spends,
//! the stages it depends on, and its scope (once per run, or once per repository). Each pass
//! starts every stage whose dependencies are all `done` in this run and whose bucket has
//! headroom (the governor's grant rule without reserving), beside the ones already running:
//! a REST stage and a GraphQL stage run together, and a per-repository stage runs several
//! repositories at once, every request holding one of the run's in-flight slots (the
//! identity's ceiling). A stage that meets a quota wait closes its bucket for the pass; a
//! stage that fails permanently blocks its dependents, which are recorded as blocked and
//! never run on data that does not exist. When nothing runs and nothing can start, the run is
//! persisted with `not_before` = the earliest instant that unblocks a ready stage and a worker
//! wakes it then; nobody sleeps through a quota window. Every page of rows commits with the
//! cursor after it, so a resumed run skips `done` stages and redoes at most one page per
//! request that was in flight.
//!
//! The decision is a pure function ([`plan::plan`]) over a snapshot of stage statuses and
//! bucket headroom; [`runner::Runner`] wraps it with the store, the governor and the clock.
//!
//! It must not talk to a provider except through headroom-http's `Client::send`, read the
//! clock except through `headroom_core::Clock`, or know anything about GitHub.

pub mod calibration;
pub mod credentials;
pub mod graph;
pub mod plan;
pub mod runner;
pub mod summary;

pub use calibration::{CalibrationRow, FamilyActual, FamilyEstimate};
pub use credentials::{IdentityError, one_identity};
pub use graph::{GraphError, LISTED_CURSOR, Scope, StageDecl, StageGraph};
pub use plan::{Action, BucketView, Plan, Snapshot, StageState, plan};
pub use runner::{
    CredentialRefusal, NoProgress, ProgressEvent, ProgressSink, RepoScope, RunOutcome, Runner,
    RunnerConfig, Stage, StageCtx, StageError, SyncError,
};
pub use summary::{BucketTally, ClockSkew, RefusedField, RunSummary, StageTally};
