//! A deterministic model of LaunchDarkly's limits against governors that do not know them:
//! fixed 10-second windows, one account-wide (`global`) and one per route, each request
//! spending one of both when served; answers carry what remains in each and the window's end,
//! never the limit. Every process (machine) has its own governor state and in-flight count and
//! sees the others only through those readings. Requests and answers travel with seeded
//! latencies; events run in time order (ties in the order scheduled).
//!
//! As the CLI does, each process first asks who it is (`caller-identity`, a route of its own
//! that no process spends much of: [`IDENTITY_LIMIT`]) and starts its work on that answer.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_core::governor::GovernorConfig;
use headroom_core::governor::multi::{self, AllDecision};
use headroom_core::governor::rule::{self, IdentityState};
use headroom_core::signal::{LD_GLOBAL, LD_ROUTE_PREFIX, LimitReason, RateLimitSignal};
use headroom_core::{Bucket, RequestKind};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The window's length.
pub const WINDOW_MS: i64 = 10_000;

/// The identity route's limit a window: one request a process, far below it.
pub const IDENTITY_LIMIT: u64 = 100;

pub fn t_ms(ms: i64) -> Timestamp {
    Timestamp::from_millisecond(1_800_000_000_000 + ms).expect("valid")
}

pub fn config(ceiling: u32) -> GovernorConfig {
    GovernorConfig {
        ceiling,
        margin: SignedDuration::from_millis(100),
        busy_retry: SignedDuration::from_millis(50),
        ..GovernorConfig::for_provider(headroom_core::signal::Provider::LaunchDarkly)
    }
}

pub fn global() -> Bucket {
    Bucket::new(LD_GLOBAL)
}

pub fn route(i: usize) -> Bucket {
    Bucket::new(&format!("{LD_ROUTE_PREFIX}GET /api/v2/r{i}"))
}

/// The model's setting.
#[derive(Debug, Clone)]
pub struct Setup {
    pub seed: u64,
    pub global_limit: u64,
    pub route_limits: Vec<u64>,
    /// Each process's start, in ms.
    pub starts: Vec<i64>,
    pub ceiling: u32,
    /// One-way latency bounds, in ms.
    pub latency: (i64, i64),
    pub until_ms: i64,
}

/// What happened.
#[derive(Debug, Default)]
pub struct Outcome {
    /// Requests that reached the server when a bucket they spend had nothing left.
    pub over_limit: u64,
    /// Served requests per process.
    pub served: Vec<u64>,
    /// Served requests per process in the run's last quarter.
    pub served_late: Vec<u64>,
    /// Served requests of all processes per window, by window index.
    pub per_window: Vec<u64>,
}

enum Event {
    Wake(usize),
    Arrive {
        proc: usize,
        route: usize,
        slots: Vec<usize>,
    },
    Answer {
        proc: usize,
        slots: Vec<usize>,
        signals: Vec<RateLimitSignal>,
    },
}

struct Server {
    window: i64,
    global: u64,
    routes: Vec<u64>,
}

/// The model's running state: the server, each process's governor state, and the events.
struct Model<'a> {
    setup: &'a Setup,
    config: GovernorConfig,
    rng: StdRng,
    server: Server,
    states: Vec<IdentityState>,
    next_route: Vec<usize>,
    /// Per process: its identity asked, and answered.
    identity: Vec<(bool, bool)>,
    wake_at: Vec<Option<i64>>,
    queue: BinaryHeap<Reverse<(i64, usize)>>,
    events: Vec<Option<Event>>,
    out: Outcome,
}

/// Runs the model; every process always has work for every route.
pub fn run(setup: &Setup) -> Outcome {
    let config = config(setup.ceiling);
    let procs = setup.starts.len();
    let mut model = Model {
        setup,
        rng: StdRng::seed_from_u64(setup.seed),
        server: Server {
            window: -1,
            global: 0,
            routes: Vec::new(),
        },
        states: (0..procs).map(|_| IdentityState::new(&config)).collect(),
        config,
        next_route: vec![0; procs],
        identity: vec![(false, false); procs],
        wake_at: vec![None; procs],
        queue: BinaryHeap::new(),
        events: Vec::new(),
        out: Outcome {
            served: vec![0; procs],
            served_late: vec![0; procs],
            per_window: vec![0; usize::try_from(setup.until_ms / WINDOW_MS + 1).unwrap_or(0)],
            ..Outcome::default()
        },
    };
    for (p, start) in setup.starts.iter().enumerate() {
        model.push(*start, Event::Wake(p));
    }
    while let Some(Reverse((now_ms, id))) = model.queue.pop() {
        if now_ms > setup.until_ms {
            break;
        }
        let Some(event) = model.events[id].take() else {
            continue;
        };
        match event {
            Event::Wake(p) => {
                if model.wake_at[p] == Some(now_ms) {
                    model.wake_at[p] = None;
                }
                model.grant_more(p, now_ms);
            }
            Event::Arrive { proc, route, slots } => model.serve(proc, route, slots, now_ms),
            Event::Answer {
                proc,
                slots,
                signals,
            } => {
                let state = &mut model.states[proc];
                for signal in &signals {
                    let resource = signal.resource.as_ref().expect("named");
                    let slot = state.find_or_insert(resource);
                    let bucket = &mut state.buckets[slot];
                    rule::apply_reading(&model.config, bucket, signal, t_ms(now_ms));
                }
                multi::release_all(state, &slots);
                model.identity[proc].1 = true;
                model.grant_more(proc, now_ms);
            }
        }
    }
    model.out
}

impl Model<'_> {
    fn push(&mut self, at: i64, event: Event) {
        self.queue.push(Reverse((at, self.events.len())));
        self.events.push(Some(event));
    }

    fn latency(&mut self) -> i64 {
        self.rng
            .random_range(self.setup.latency.0..=self.setup.latency.1)
    }

    /// A request reaching the server: served if both its buckets have some left (else
    /// counted over the limit), answered with what remains after it.
    fn serve(&mut self, proc: usize, r: usize, slots: Vec<usize>, now_ms: i64) {
        let window = now_ms.div_euclid(WINDOW_MS);
        let server = &mut self.server;
        if window != server.window {
            server.window = window;
            server.global = self.setup.global_limit;
            server.routes = self.setup.route_limits.clone();
            server.routes.push(IDENTITY_LIMIT);
        }
        let refused = server.global == 0 || server.routes[r] == 0;
        if refused {
            self.out.over_limit += 1;
        } else {
            server.global -= 1;
            server.routes[r] -= 1;
            self.out.served[proc] += 1;
            if now_ms >= self.setup.until_ms * 3 / 4 {
                self.out.served_late[proc] += 1;
            }
            let w = usize::try_from(window).unwrap_or(0);
            if let Some(count) = self.out.per_window.get_mut(w) {
                *count += 1;
            }
        }
        let reset = Some(t_ms((window + 1) * WINDOW_MS));
        let reason = refused.then_some(LimitReason::Primary);
        let signals = [(global(), server.global), (route(r), server.routes[r])]
            .into_iter()
            .map(|(bucket, left)| RateLimitSignal {
                resource: Some(bucket),
                remaining: Some(left),
                reset_at: reset,
                reason,
                ..RateLimitSignal::default()
            })
            .collect();
        let at = now_ms + self.latency();
        self.push(
            at,
            Event::Answer {
                proc,
                slots,
                signals,
            },
        );
    }

    /// Grants what process `p`'s governor allows, every route tried in turn; then sleeps until
    /// the earliest wait (an answer wakes it sooner).
    fn grant_more(&mut self, p: usize, now_ms: i64) {
        let routes = self.setup.route_limits.len();
        match self.identity[p] {
            (false, _) => {
                self.identity[p].0 = true;
                return self.ask_identity(p, now_ms, routes);
            }
            (true, false) => return,
            (true, true) => {}
        }
        let mut earliest: Option<i64> = None;
        let mut refusals = 0;
        while refusals < routes {
            let r = self.next_route[p];
            self.next_route[p] = (r + 1) % routes;
            let asks = [(global(), 1), (route(r), 1)];
            let state = &mut self.states[p];
            let kind = RequestKind::REST_READ;
            match multi::grant_all(&self.config, state, &asks, kind, t_ms(now_ms)) {
                AllDecision::Grant(granted) => {
                    refusals = 0;
                    let slots = granted.iter().map(|g| g.slot).collect();
                    let at = now_ms + self.latency();
                    self.push(
                        at,
                        Event::Arrive {
                            proc: p,
                            route: r,
                            slots,
                        },
                    );
                }
                AllDecision::Wait { until, .. } => {
                    refusals += 1;
                    let at = (until.as_millisecond() - t_ms(0).as_millisecond()).max(now_ms + 1);
                    earliest = Some(earliest.map_or(at, |e| e.min(at)));
                }
            }
        }
        if let Some(at) = earliest {
            self.wake(p, at);
        }
    }

    fn wake(&mut self, p: usize, at: i64) {
        if self.wake_at[p].is_none_or(|w| at < w) {
            self.wake_at[p] = Some(at);
            self.push(at, Event::Wake(p));
        }
    }

    /// Process `p`'s first request: who it is, on the identity route (index `routes`), under
    /// the same rule; its answer starts the work.
    fn ask_identity(&mut self, p: usize, now_ms: i64, routes: usize) {
        let asks = [(global(), 1), (route(routes), 1)];
        let state = &mut self.states[p];
        match multi::grant_all(
            &self.config,
            state,
            &asks,
            RequestKind::REST_READ,
            t_ms(now_ms),
        ) {
            AllDecision::Grant(granted) => {
                let slots = granted.iter().map(|g| g.slot).collect();
                let at = now_ms + self.latency();
                let arrive = Event::Arrive {
                    proc: p,
                    route: routes,
                    slots,
                };
                self.push(at, arrive);
            }
            AllDecision::Wait { until, .. } => {
                self.identity[p].0 = false;
                let at = (until.as_millisecond() - t_ms(0).as_millisecond()).max(now_ms + 1);
                self.wake(p, at);
            }
        }
    }
}
