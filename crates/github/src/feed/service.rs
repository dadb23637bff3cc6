//! The feed service loop, as `headroom run` drives it: a poll tick that polls the source when
//! it is due, followed by an enrichment cycle; a reconciler sweep (once at start, then on its
//! own cadence) that rebuilds pending work from committed rows and dispatches a cycle when work
//! is claimable; a cycle deferred by search pacing (or any ledger) resumed at that instant.
//! It stops between steps when the shutdown future completes, after a number of ticks, or
//! when its hooks say so. The hooks are how a caller watches each step and how it waits, so a
//! benchmark runs this same loop under a virtual clock.

use std::future::Future;

use headroom_core::clock::{Clock, SignedDuration, Timestamp, TokioClock};
use headroom_core::telemetry;

use super::enrich::{EnrichOptions, EnrichReport, Enricher};
use super::poll::PollOutcome;
use super::reconcile::reconcile;

/// The cadence of the loop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceSettings {
    /// Between poll ticks.
    pub tick: SignedDuration,
    /// Between reconciler sweeps.
    pub reconcile_every: SignedDuration,
    /// Stop after this many ticks (none: run until stopped).
    pub ticks: Option<u64>,
}

/// What one step of the loop did.
#[derive(Debug, Clone, Default)]
pub struct StepReport {
    /// Whether the step was a poll tick.
    pub ticked: bool,
    /// The enrichment cycle's report, when a cycle was dispatched and completed.
    pub enrichment: Option<EnrichReport>,
    /// Whether the sweep, the poll or the cycle failed (each failure is logged).
    pub failed: bool,
}

/// How a caller watches the loop and how the loop waits.
pub trait ServiceHooks {
    /// Called after each step; `false` stops the service.
    fn after_step(&mut self, step: &StepReport) -> impl Future<Output = bool> + Send;

    /// Waits `by` on `clock`.
    fn sleep(&mut self, clock: TokioClock, by: SignedDuration) -> impl Future<Output = ()> + Send {
        async move { clock.sleep(by).await }
    }
}

/// Hooks that neither watch nor stop: the service runs until shut down or out of ticks.
#[derive(Debug, Clone, Copy, Default)]
pub struct UntilStopped;

impl ServiceHooks for UntilStopped {
    fn after_step(&mut self, _: &StepReport) -> impl Future<Output = bool> + Send {
        std::future::ready(true)
    }
}

/// The feed service: the enricher (and through it the poller's store, state, client and
/// clock) and the loop's cadence.
#[derive(Debug, Clone)]
pub struct FeedService {
    /// Enrichment, over the poller.
    pub enricher: Enricher,
    /// The cadence.
    pub settings: ServiceSettings,
}

/// When each schedule is next due.
#[derive(Debug, Clone, Copy)]
struct Schedule {
    next_tick: Timestamp,
    next_reconcile: Timestamp,
    /// A deferred cycle's resume instant, when it falls before the next tick.
    next_enrich: Option<Timestamp>,
}

impl Schedule {
    fn wake(&self) -> Timestamp {
        self.next_enrich
            .map_or(self.next_tick, |at| at.min(self.next_tick))
            .min(self.next_reconcile)
    }
}

impl FeedService {
    /// A service over `enricher` with `settings`.
    pub fn new(enricher: Enricher, settings: ServiceSettings) -> Self {
        Self { enricher, settings }
    }

    /// Runs the loop until `shutdown` completes, the ticks run out or `hooks` stop it;
    /// returns the number of ticks done.
    pub async fn run(
        &self,
        hooks: &mut impl ServiceHooks,
        shutdown: impl Future<Output = ()>,
    ) -> u64 {
        let clock = self.enricher.poller.clock;
        let mut done = 0u64;
        tokio::pin!(shutdown);
        // Both schedules start due: a restart sweeps before it polls.
        let now = clock.now();
        let mut schedule = Schedule {
            next_tick: now,
            next_reconcile: now,
            next_enrich: None,
        };
        loop {
            let report = tokio::select! {
                report = self.step(&mut schedule) => report,
                () = &mut shutdown => break,
            };
            let last = report.ticked && {
                done += 1;
                self.settings.ticks.is_some_and(|n| done >= n)
            };
            // The hooks hear every step, the last one included.
            if !hooks.after_step(&report).await || last {
                break;
            }
            let wait = schedule
                .wake()
                .duration_since(clock.now())
                .max(SignedDuration::ZERO);
            tokio::select! {
                () = hooks.sleep(clock, wait) => {}
                () = &mut shutdown => break,
            }
        }
        done
    }

    /// One step: a sweep when due, a poll when the tick is due, then an enrichment cycle when
    /// either asks for one or a deferral has lapsed.
    async fn step(&self, schedule: &mut Schedule) -> StepReport {
        let poller = &self.enricher.poller;
        let mut report = StepReport::default();
        let now = poller.clock.now();
        let mut dispatch = false;
        if now >= schedule.next_reconcile {
            match reconcile(poller, self.abandon_after()).await {
                Ok(sweep) => dispatch = sweep.claimable_now,
                Err(e) => {
                    tracing::error!(event = telemetry::RECONCILER_FAILED, error = %e);
                    report.failed = true;
                }
            }
            schedule.next_reconcile = now + self.settings.reconcile_every;
        }
        report.ticked = now >= schedule.next_tick;
        if report.ticked {
            report.failed |= !self.tick().await;
            schedule.next_tick = now + self.settings.tick;
            dispatch = true;
        } else if dispatch {
            tracing::info!(
                event = telemetry::ENRICHMENT_DISPATCHED,
                reason = "reconciler"
            );
        } else if schedule.next_enrich.is_some_and(|at| now >= at) {
            tracing::debug!(
                event = telemetry::ENRICHMENT_DISPATCHED,
                reason = "deferral_lapsed"
            );
            dispatch = true;
        }
        if dispatch {
            match self.enricher.run(EnrichOptions::default()).await {
                Ok(cycle) => {
                    let now = poller.clock.now();
                    schedule.next_enrich = cycle
                        .deferrals
                        .iter()
                        .filter_map(|(_, until)| *until)
                        .filter(|at| *at > now && *at < schedule.next_tick)
                        .min();
                    report.enrichment = Some(cycle);
                }
                Err(e) => {
                    tracing::error!(event = telemetry::ENRICHMENT_CYCLE_FAILED, error = %e);
                    schedule.next_enrich = None;
                    report.failed = true;
                }
            }
        }
        // The step's burst is over: what the reading spacing held back is handed over.
        poller.client.flush_readings().await;
        report
    }

    /// Polls the source (the poller decides whether it is due); `false` when the poll failed
    /// (an error, or an attempt that failed), never for a deferral.
    async fn tick(&self) -> bool {
        match self.enricher.poller.poll_once(false).await {
            Ok(PollOutcome::Completed { run_id, counts, .. }) => {
                tracing::info!(event = telemetry::SERVICE_TICK, run_id = %run_id,
                    events_created = counts.events_created);
                if counts.events_created > 0 {
                    tracing::info!(
                        event = telemetry::ENRICHMENT_DISPATCHED,
                        reason = "ingestion"
                    );
                }
                true
            }
            // The attempt failed (its run and the source's backoff say why, already logged):
            // a failed tick, unlike a deferral or a busy source.
            Ok(PollOutcome::Failed { run_id, .. }) => {
                tracing::debug!(event = telemetry::SERVICE_TICK, run_id = %run_id, outcome = "failed");
                false
            }
            Ok(other) => {
                tracing::debug!(event = telemetry::SERVICE_TICK, outcome = ?other);
                true
            }
            Err(e) => {
                tracing::error!(event = telemetry::INGESTION_CYCLE_FAILED, error = %e);
                false
            }
        }
    }

    /// A run open longer than any live poller's hold on the source belonged to a dead process.
    fn abandon_after(&self) -> SignedDuration {
        self.enricher
            .poller
            .settings
            .source_lease
            .max(SignedDuration::from_secs(600))
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::expect_used)]

    use std::sync::Arc;

    use headroom_core::Governor;
    use headroom_core::governor::GovernorConfig;
    use headroom_http::transport::SimTransport;
    use headroom_http::{Client, ClientParts, UrlPolicy};
    use headroom_sim::{Scenario, SimConfig, Simulator};
    use headroom_store::feed_state::{EntityKind, SourceStatus, WindowStatus, open_feed};

    use super::*;
    use crate::feed::enrich::EnrichSettings;
    use crate::feed::poll::{PollSettings, Poller, SOURCE_TYPE};

    const API: &str = "http://127.0.0.1:7000";

    /// Keeps every step's report; stops after `steps` of them. Sleeps on a paused clock, so
    /// the wait between ticks passes at once (paused only while sleeping: SQLite's pool times
    /// out on a clock that stays paused while its worker thread runs a query).
    struct Recorder {
        steps: usize,
        seen: Vec<StepReport>,
    }

    impl ServiceHooks for Recorder {
        fn after_step(&mut self, step: &StepReport) -> impl Future<Output = bool> + Send {
            self.seen.push(step.clone());
            std::future::ready(self.seen.len() < self.steps)
        }

        async fn sleep(&mut self, clock: TokioClock, by: SignedDuration) {
            tokio::time::pause();
            clock.sleep(by).await;
            tokio::time::resume();
        }
    }

    async fn service(target: &str, clock: TokioClock, sim: &Simulator) -> FeedService {
        let governor = Governor::in_memory(
            GovernorConfig {
                ceiling: 1,
                ..GovernorConfig::default()
            },
            Arc::new(clock),
        )
        .expect("governor");
        let mut parts = ClientParts::new(
            UrlPolicy::for_api_url(API).expect("loopback API"),
            governor,
            Arc::new(SimTransport::new(sim.clone())),
            clock,
        );
        parts.config.jitter_seed = Some(5);
        let (store, state) = open_feed(target).await.expect("open");
        let poller = Poller {
            store,
            state,
            client: Client::new(parts),
            credential: None,
            clock,
            settings: PollSettings::default(),
        };
        let mut enrich = EnrichSettings::default();
        enrich.search.pacing = SignedDuration::ZERO;
        FeedService::new(
            Enricher::new(poller, enrich),
            ServiceSettings {
                tick: SignedDuration::from_secs(300),
                reconcile_every: SignedDuration::from_secs(3_600),
                ticks: None,
            },
        )
    }

    #[tokio::test]
    async fn one_tick_polls_the_feed_then_enriches_what_it_stored() {
        let start = Timestamp::from_second(1_800_000_000).expect("valid");
        let clock = TokioClock::anchored_at(start);
        let mut config = SimConfig::default().with_scenario(Scenario::Default);
        config.public_base_url = API.to_owned();
        let sim = Simulator::new(config, clock).expect("simulator");
        let db = headroom_testkit::TempSqlite::new();
        let service = service(&db.path(), clock, &sim).await;
        let state = &service.enricher.poller.state;
        assert_eq!(state.event_source(SOURCE_TYPE).await.expect("read"), None);

        let mut hooks = Recorder {
            steps: 2,
            seen: Vec::new(),
        };
        let ticks = service.run(&mut hooks, std::future::pending()).await;

        // Two ticks, the second a tick interval later on the virtual clock.
        assert_eq!(ticks, 2);
        assert!(clock.now() >= start + SignedDuration::from_secs(300));
        let [first, second] = hooks.seen.as_slice() else {
            panic!("two steps, got {:?}", hooks.seen);
        };
        assert!(first.ticked && !first.failed, "{first:?}");
        // The first tick's cycle enriched what its poll stored: two search batches, two
        // detail fallbacks; four entities applied, two gone terminal (404s).
        let cycle = first.enrichment.as_ref().expect("a cycle after the poll");
        assert_eq!(
            (cycle.search_batches, cycle.detail_requests),
            (2, 2),
            "{cycle:?}"
        );
        assert_eq!((cycle.applied, cycle.terminal), (4, 2), "{cycle:?}");
        // The second tick found the backlog empty: its cycle sent nothing.
        assert!(second.ticked && !second.failed, "{second:?}");
        let again = second.enrichment.as_ref().expect("a cycle after the tick");
        assert_eq!(again.requests, 0, "{again:?}");

        // What the store now holds: the page's four valid pushes (three quarantined), a
        // completed ingestion run, the source idle and scheduled, the core window open.
        let overview = state.feed_overview().await.expect("overview");
        assert_eq!((overview.push_events, overview.quarantined), (4, 3));
        assert!(overview.latest_completed_run.is_some());
        for kind in [EntityKind::Actor, EntityKind::Repository] {
            let c = state.enrichment_counts(kind).await.expect("counts");
            assert_eq!(
                (
                    c.complete,
                    c.permanent_failure,
                    c.pending,
                    c.retryable_failure
                ),
                (2, 1, 0, 0),
                "{kind:?}"
            );
        }
        let source = state
            .event_source(SOURCE_TYPE)
            .await
            .expect("read")
            .expect("created by the first poll");
        assert_eq!(source.status, SourceStatus::Idle);
        assert!(source.next_poll_at.is_some_and(|at| at > clock.now()));
        let ledger = service
            .enricher
            .poller
            .core_ledger()
            .await
            .expect("read")
            .expect("row");
        assert_eq!(ledger.window_status, WindowStatus::Active);
        assert!(
            ledger.poll_used >= 1 && ledger.enrichment_used >= 2,
            "{ledger:?}"
        );
        let searches = sim
            .request_log()
            .iter()
            .filter(|e| e.path.starts_with("/search/"))
            .count();
        assert_eq!(searches, 2);
    }
}
