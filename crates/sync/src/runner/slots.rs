//! The run's in-flight slots (the identity's ceiling), shared between the quota buckets its
//! stages spend.
//!
//! A first-come queue lets the bucket with the slowest answers take the slots: at GraphQL's
//! 800 ms against REST's 150 ms, GraphQL pages held eight of ten slots in a sync's first
//! minute, REST sent 510 requests where its points-per-minute limit allowed 900, and that
//! minute's REST budget was gone for good (`org_makespan`, secondary-bound case). So while
//! requests of several buckets wait, a freed slot goes to the waiting bucket holding the
//! fewest: each bucket gets an equal share when all want more, and whatever one leaves
//! unused goes to the others (a bucket paced to a stop has no waiters).
//!
//! Within a bucket, the next page of a cursor chain goes before a scope's first request. A
//! chain's pages must follow one another, so each page that queues behind the stages' first
//! requests delays the whole chain, and the chains begun last were what the run's end waited
//! for (`org_makespan`, latency-bound case: three chains one page at a time in its last 3 s).
//! Before both go the requests of a stage another waits for (pull requests, before commit
//! files): the run's critical path.
//!
//! Each scope of work (a repository of a stage, one independent request) also keeps here the
//! slot its last request took, parked until the answer is stored, and whether it has sent
//! before.

use std::cell::{Cell, RefCell};
use std::collections::{HashMap, VecDeque};
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard};

use tokio::sync::oneshot;

/// Which waiting bucket a freed slot goes to: the one holding the fewest slots, the one whose
/// oldest waiter asked first among equals. `None` when nothing waits.
pub(super) fn next_bucket<'a>(
    held: &HashMap<String, usize>,
    oldest_waiter: impl IntoIterator<Item = (&'a str, u64)>,
) -> Option<&'a str> {
    oldest_waiter
        .into_iter()
        .min_by_key(|(bucket, asked)| (held.get(*bucket).copied().unwrap_or(0), *asked))
        .map(|(bucket, _)| bucket)
}

/// Where a request stands, which orders it among its bucket's waiters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Turn {
    /// Its stage is one another stage waits for ([`crate::StageGraph::is_awaited`]).
    pub(super) awaited: bool,
    /// A later request of a scope answered before (a chain's next page), not its first.
    pub(super) next: bool,
}

impl Turn {
    /// The queue it waits in, served in this order: an awaited stage's requests (its chains'
    /// next pages first), then other chains' next pages, then first requests.
    fn rank(self) -> usize {
        match (self.awaited, self.next) {
            (true, true) => 0,
            (true, false) => 1,
            (false, true) => 2,
            (false, false) => 3,
        }
    }
}

/// One bucket's waiters, a queue per [`Turn::rank`], each in order of asking (with its ticket
/// number).
#[derive(Default)]
struct Waiters {
    queues: [VecDeque<(u64, oneshot::Sender<()>)>; 4],
}

impl Waiters {
    /// The ticket of the bucket's longest-waiting request.
    fn oldest(&self) -> Option<u64> {
        self.queues
            .iter()
            .filter_map(|q| q.front().map(|(t, _)| *t))
            .min()
    }

    /// The waiter served next: the front of the first queue that has one.
    fn pop(&mut self) -> Option<oneshot::Sender<()>> {
        self.queues
            .iter_mut()
            .find_map(VecDeque::pop_front)
            .map(|(_, tx)| tx)
    }

    fn push(&mut self, turn: Turn, ticket: u64, tx: oneshot::Sender<()>) {
        self.queues[turn.rank()].push_back((ticket, tx));
    }
}

/// The pool of slots.
pub(super) struct SlotPool {
    state: Mutex<PoolState>,
}

struct PoolState {
    free: usize,
    held: HashMap<String, usize>,
    /// Per bucket, its waiters.
    waiting: HashMap<String, Waiters>,
    tickets: u64,
}

impl PoolState {
    /// Hands free slots to waiters, skipping those that stopped waiting.
    fn dispatch(&mut self) {
        while self.free > 0 {
            let oldest = self
                .waiting
                .iter()
                .filter_map(|(bucket, queue)| queue.oldest().map(|t| (bucket.as_str(), t)));
            let Some(bucket) = next_bucket(&self.held, oldest).map(str::to_owned) else {
                return;
            };
            let Some(waiter) = self.waiting.get_mut(&bucket).and_then(Waiters::pop) else {
                return;
            };
            if waiter.send(()).is_ok() {
                self.free -= 1;
                *self.held.entry(bucket).or_default() += 1;
            }
        }
    }

    fn release(&mut self, bucket: &str) {
        if let Some(n) = self.held.get_mut(bucket) {
            *n = n.saturating_sub(1);
        }
        self.free += 1;
        self.dispatch();
    }
}

/// One slot, held for `bucket` until dropped.
pub(super) struct Slot {
    pool: Arc<SlotPool>,
    bucket: String,
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.pool.lock().release(&self.bucket);
    }
}

/// A waiter that stops waiting (its request dropped) gives back a slot handed to it meanwhile.
struct Waiting {
    pool: Arc<SlotPool>,
    bucket: String,
    granted: Option<oneshot::Receiver<()>>,
}

impl Drop for Waiting {
    fn drop(&mut self) {
        if let Some(mut granted) = self.granted.take() {
            granted.close();
            if granted.try_recv().is_ok() {
                self.pool.lock().release(&self.bucket);
            }
        }
    }
}

impl SlotPool {
    /// A pool of `slots` slots (at least one).
    pub(super) fn new(slots: usize) -> Arc<Self> {
        Arc::new(Self {
            state: Mutex::new(PoolState {
                free: slots.max(1),
                held: HashMap::new(),
                waiting: HashMap::new(),
                tickets: 0,
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, PoolState> {
        // The state is counts and queues, consistent after every statement.
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Waits for a slot for a request of `bucket`, at its `turn` among the bucket's waiters.
    pub(super) async fn acquire(self: &Arc<Self>, bucket: &str, turn: Turn) -> Slot {
        let granted = {
            let mut state = self.lock();
            if state.free > 0 {
                // Free slots mean no one waits (a freed slot is handed on at once).
                state.free -= 1;
                *state.held.entry(bucket.to_owned()).or_default() += 1;
                return Slot {
                    pool: Arc::clone(self),
                    bucket: bucket.to_owned(),
                };
            }
            let (tx, rx) = oneshot::channel();
            state.tickets += 1;
            let ticket = state.tickets;
            state
                .waiting
                .entry(bucket.to_owned())
                .or_default()
                .push(turn, ticket, tx);
            rx
        };
        let mut waiting = Waiting {
            pool: Arc::clone(self),
            bucket: bucket.to_owned(),
            granted: Some(granted),
        };
        if let Some(granted) = waiting.granted.as_mut() {
            // The sender lives in the pool, which outlives every waiter (it holds this one's
            // `Arc`): an error cannot happen, and would only mean no slot was handed over.
            let _ = granted.await;
        }
        waiting.granted = None;
        Slot {
            pool: Arc::clone(self),
            bucket: bucket.to_owned(),
        }
    }
}

tokio::task_local! {
    /// Inside one scope of work (a repository of a stage, an item of
    /// `StageCtx::for_each_request`): the in-flight slot its last request took, held until
    /// the answer is stored (the scope's next write), its next request reuses it, or the
    /// scope ends. So the answers a stop loses, in flight or not yet stored, are never more
    /// than the run's slots.
    static PARKED_SLOT: RefCell<Option<Slot>>;
    /// Inside one scope of work: whether it has sent a request before, so that its next one
    /// (a chain's next page) is served before the first requests of its bucket.
    static SCOPE_SENT: Cell<bool>;
}

/// Runs `work` as one scope of work (see [`PARKED_SLOT`]).
pub(super) async fn in_scope<F: Future>(work: F) -> F::Output {
    SCOPE_SENT
        .scope(
            Cell::new(false),
            PARKED_SLOT.scope(RefCell::new(None), work),
        )
        .await
}

/// This request's turn among its bucket's waiters, counting it as sent in its scope of work.
pub(super) fn turn(awaited: bool) -> Turn {
    let next = SCOPE_SENT
        .try_with(|sent| sent.replace(true))
        .unwrap_or(false);
    Turn { awaited, next }
}

/// Takes the current scope's parked slot, if any.
pub(super) fn unpark() -> Option<Slot> {
    PARKED_SLOT
        .try_with(|cell| cell.borrow_mut().take())
        .ok()
        .flatten()
}

/// The answer is stored (or there is nothing to store): the scope's slot goes back.
pub(super) fn release_parked() {
    drop(unpark());
}

/// Parks `slot` in the current scope until its answer is stored (see [`PARKED_SLOT`]).
pub(super) fn park(slot: Option<Slot>) {
    let _ = PARKED_SLOT.try_with(|cell| *cell.borrow_mut() = slot);
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn a_freed_slot_goes_to_the_waiting_bucket_holding_fewest() {
        let held = HashMap::from([("graphql".to_owned(), 8), ("core".to_owned(), 1)]);
        assert_eq!(
            next_bucket(&held, [("graphql", 1), ("core", 7)]),
            Some("core")
        );
        let even = HashMap::from([("graphql".to_owned(), 5), ("core".to_owned(), 5)]);
        assert_eq!(
            next_bucket(&even, [("graphql", 1), ("core", 7)]),
            Some("graphql")
        );
        assert_eq!(next_bucket(&held, []), None);
    }

    #[tokio::test]
    async fn buckets_share_the_slots_and_a_dropped_waiter_gives_its_slot_back() {
        let pool = SlotPool::new(4);
        let mut graphql = Vec::new();
        for _ in 0..4 {
            graphql.push(pool.acquire("graphql", FIRST).await);
        }
        // Four more GraphQL requests wait, then two REST ones.
        let mut waiters = Vec::new();
        for bucket in ["graphql", "graphql", "graphql", "graphql", "core", "core"] {
            let pool = Arc::clone(&pool);
            waiters.push(tokio::spawn(
                async move { pool.acquire(bucket, FIRST).await },
            ));
            tokio::task::yield_now().await;
        }
        // A dropped waiter (the first REST one aborted) leaves the queue.
        waiters[4].abort();
        tokio::task::yield_now().await;
        // Two slots freed: each goes to REST while it holds fewer, the first to the one
        // REST waiter left, the second to the oldest GraphQL waiter.
        drop(graphql.pop());
        drop(graphql.pop());
        let core = waiters.pop().expect("core").await.expect("granted");
        assert_eq!(core.bucket, "core");
        let first = waiters.remove(0).await.expect("granted");
        assert_eq!(first.bucket, "graphql");
        let state = pool.lock();
        assert_eq!(state.held.get("core"), Some(&1));
        assert_eq!(state.held.get("graphql"), Some(&3));
        assert_eq!(state.free, 0);
    }

    /// A first request of a stage no other waits for: the last to be served.
    const FIRST: Turn = Turn {
        awaited: false,
        next: false,
    };
    /// A chain's next page.
    const NEXT: Turn = Turn {
        awaited: false,
        next: true,
    };
    /// A first request of a stage another waits for.
    const AWAITED: Turn = Turn {
        awaited: true,
        next: false,
    };

    #[tokio::test]
    async fn a_chains_next_page_goes_before_first_requests_of_its_bucket() {
        let pool = SlotPool::new(1);
        let held = pool.acquire("graphql", FIRST).await;
        let mut waiters = Vec::new();
        for turn in [FIRST, FIRST, NEXT] {
            let pool = Arc::clone(&pool);
            waiters.push(tokio::spawn(async move {
                let slot = pool.acquire("graphql", turn).await;
                (turn, slot)
            }));
            tokio::task::yield_now().await;
        }
        drop(held);
        let (turn, slot) = waiters.pop().expect("next").await.expect("granted");
        assert_eq!(turn, NEXT);
        drop(slot);
        let (turn, _slot) = waiters.remove(0).await.expect("granted");
        assert_eq!(turn, FIRST);
        assert_eq!(pool.lock().waiting["graphql"].oldest(), Some(2));
    }

    #[test]
    fn an_awaited_stage_goes_first_and_buckets_count_from_their_oldest_waiter() {
        let mut waiters = Waiters::default();
        waiters.push(FIRST, 1, oneshot::channel().0);
        waiters.push(NEXT, 5, oneshot::channel().0);
        waiters.push(AWAITED, 7, oneshot::channel().0);
        // Between buckets a bucket counts from its oldest waiter, whichever its turn.
        assert_eq!(waiters.oldest(), Some(1));
        // Served: the awaited stage's request, then the next page, then the first request.
        for (served, left) in [(AWAITED, [0, 0, 1, 1]), (NEXT, [0, 0, 0, 1])] {
            assert!(waiters.pop().is_some(), "{served:?}");
            let lens: Vec<usize> = waiters.queues.iter().map(VecDeque::len).collect();
            assert_eq!(lens, left, "after {served:?}");
        }
        assert_eq!(waiters.oldest(), Some(1));
        assert!(waiters.pop().is_some());
        assert_eq!(waiters.oldest(), None);
    }

    proptest! {
        /// Whatever holds and waits, a slot goes to a waiting bucket, and never to one holding
        /// more than another waiting bucket.
        #[test]
        fn the_choice_is_a_waiting_bucket_holding_fewest(
            held in proptest::collection::vec(0usize..12, 3),
            waits in proptest::collection::vec(proptest::option::of(0u64..100), 3),
        ) {
            let names = ["a", "b", "c"];
            let held: HashMap<String, usize> =
                names.iter().zip(&held).map(|(n, h)| ((*n).to_owned(), *h)).collect();
            let waiting: Vec<(&str, u64)> = names
                .iter()
                .zip(&waits)
                .filter_map(|(n, w)| w.map(|t| (*n, t)))
                .collect();
            let chosen = next_bucket(&held, waiting.iter().copied());
            prop_assert_eq!(chosen.is_some(), !waiting.is_empty());
            if let Some(chosen) = chosen {
                prop_assert!(waiting.iter().any(|(n, _)| *n == chosen));
                for (n, _) in &waiting {
                    prop_assert!(held[chosen] <= held[*n]);
                }
            }
        }
    }
}
