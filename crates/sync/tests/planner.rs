//! Property tests of the pure planner: over random graphs, states, bucket headroom and sets
//! of stages already running, it never starts a stage before its dependencies or twice,
//! never starts one on a closed bucket, starts every stage that could start, hibernates only
//! with nothing running and only until the earliest instant that unblocks a ready stage, and
//! blocks exactly the dependents of failed stages. A simulated concurrent execution with
//! random bucket closures and random completion order always ends with every stage done,
//! each started after its dependencies were done.

use std::collections::{BTreeSet, HashMap, HashSet};

use headroom_core::clock::{SignedDuration, Timestamp};
use headroom_sync::{Action, BucketView, Scope, Snapshot, StageDecl, StageGraph, StageState, plan};
use proptest::prelude::*;

const NAMES: [&str; 8] = ["s0", "s1", "s2", "s3", "s4", "s5", "s6", "s7"];
const BUCKETS: [&str; 2] = ["core", "graphql"];

fn leak(v: Vec<&'static str>) -> &'static [&'static str] {
    Box::leak(v.into_boxed_slice())
}

/// A random DAG: stage i may depend on any j < i.
fn graph_strategy() -> impl Strategy<Value = StageGraph> {
    (2usize..=8)
        .prop_flat_map(|n| {
            (
                Just(n),
                prop::collection::vec(prop::collection::vec(any::<bool>(), 8), n),
                prop::collection::vec(0usize..2, n),
            )
        })
        .prop_map(|(n, deps, buckets)| {
            let decls = (0..n)
                .map(|i| StageDecl {
                    name: NAMES[i],
                    title: NAMES[i],
                    bucket: BUCKETS[buckets[i]],
                    estimated_cost: 1,
                    depends_on: leak((0..i).filter(|&j| deps[i][j]).map(|j| NAMES[j]).collect()),
                    after_listing: false,
                    scope: Scope::Once,
                })
                .collect();
            StageGraph::new(decls, None).expect("a DAG declared in order")
        })
}

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_800_000_000 + secs).expect("valid")
}

fn state_strategy() -> impl Strategy<Value = StageState> {
    prop_oneof![
        Just(StageState::Pending),
        Just(StageState::Running),
        Just(StageState::Done),
        Just(StageState::Failed { reason: "x".into() }),
        (0i64..200).prop_map(|s| StageState::Deferred { until: Some(t(s)) }),
        Just(StageState::Deferred { until: None }),
    ]
}

fn bucket_strategy() -> impl Strategy<Value = BucketView> {
    prop_oneof![
        Just(BucketView::Open),
        (1i64..4000).prop_map(|s| BucketView::Closed { until: t(s) }),
    ]
}

proptest! {
    #[test]
    fn decisions_respect_dependencies_buckets_and_failures(
        graph in graph_strategy(),
        states in prop::collection::vec(state_strategy(), 8),
        buckets in prop::collection::vec(bucket_strategy(), 2),
        running in prop::collection::vec(any::<bool>(), 8),
        now_s in 0i64..100,
    ) {
        let now = t(now_s);
        let mut snapshot = Snapshot { now: Some(now), ..Snapshot::default() };
        for (i, d) in graph.stages().iter().enumerate() {
            snapshot.stages.insert(d.name.to_owned(), states[i].clone());
        }
        for (i, b) in BUCKETS.iter().enumerate() {
            snapshot.buckets.insert((*b).to_owned(), buckets[i]);
        }
        let p = plan(&graph, &snapshot);
        // Blocked = exactly the unsettled transitive dependents of failed stages.
        let failed: HashSet<&str> = graph.stages().iter()
            .filter(|d| matches!(snapshot.stages[d.name], StageState::Failed { .. }))
            .map(|d| d.name).collect();
        let mut expected_blocked = HashSet::new();
        for d in graph.stages() {
            let st = &snapshot.stages[d.name];
            let settled = matches!(st, StageState::Done | StageState::Failed { .. } | StageState::Blocked { .. });
            // A dependency that failed, or that is itself blocked, blocks (a done dependency
            // has its data, whatever happened before it).
            if !settled && d.depends_on.iter().any(|x| failed.contains(x) || expected_blocked.contains(x)) {
                expected_blocked.insert(d.name);
            }
        }
        let blocked: HashSet<&str> = p.block.iter().map(|(s, _)| s.as_str()).collect();
        prop_assert_eq!(&blocked, &expected_blocked);
        let deps_done = |name: &str| graph.get(name).expect("known").depends_on.iter()
            .all(|x| snapshot.stages[*x] == StageState::Done);
        let opens_at = |name: &str| -> Option<Timestamp> {
            let d = graph.get(name).expect("known");
            let b = match snapshot.buckets[d.bucket] { BucketView::Closed { until } => Some(until), BucketView::Open => None };
            let s = match snapshot.stages[name] { StageState::Deferred { until: Some(u) } if u > now => Some(u), _ => None };
            match (b, s) { (None, None) => None, (Some(a), None) | (None, Some(a)) => Some(a), (Some(a), Some(b)) => Some(a.max(b)) }
        };
        let ready: Vec<&str> = graph.stages().iter().map(|d| d.name)
            .filter(|n| !blocked.contains(n))
            .filter(|n| matches!(snapshot.stages[*n], StageState::Pending | StageState::Running | StageState::Deferred { .. }))
            .filter(|n| deps_done(n))
            .collect();
        // The drive only starts ready stages, and a running stage's dependencies stay done.
        let active: BTreeSet<String> = graph.stages().iter().enumerate()
            .filter(|(i, d)| running[*i] && ready.contains(&d.name))
            .map(|(_, d)| d.name.to_owned()).collect();
        let p = plan(&graph, &Snapshot { active: active.clone(), ..snapshot.clone() });
        let waiting: Vec<&str> = ready.iter().copied().filter(|n| !active.contains(*n)).collect();
        let startable: BTreeSet<&str> = waiting.iter().copied().filter(|n| opens_at(n).is_none()).collect();
        match &p.action {
            Action::Run { stages } => {
                let named: BTreeSet<&str> = stages.iter().map(String::as_str).collect();
                prop_assert_eq!(named.len(), stages.len(), "a stage named twice");
                // Every stage that can start does, and nothing else.
                prop_assert_eq!(&named, &startable);
                prop_assert!(!stages.is_empty());
            }
            Action::Await { until } => {
                prop_assert!(!active.is_empty());
                prop_assert!(startable.is_empty(), "something could start");
                prop_assert_eq!(*until, waiting.iter().filter_map(|n| opens_at(n)).min());
            }
            Action::Hibernate { not_before, .. } => {
                prop_assert!(active.is_empty(), "hibernating with stages running");
                prop_assert!(!ready.is_empty());
                prop_assert!(ready.iter().all(|n| opens_at(n).is_some()), "something was runnable");
                let earliest = ready.iter().filter_map(|n| opens_at(n)).min().expect("some");
                prop_assert_eq!(*not_before, earliest);
            }
            Action::Finish => {
                prop_assert!(active.is_empty(), "finishing with stages running");
                prop_assert!(ready.is_empty());
            }
        }
    }

    #[test]
    fn a_simulated_run_finishes_every_stage_in_dependency_order(
        graph in graph_strategy(),
        closures in prop::collection::vec((0usize..2, 1i64..3600), 0..20),
        picks in prop::collection::vec(0usize..8, 64),
    ) {
        let mut snapshot = Snapshot::default();
        for d in graph.stages() {
            snapshot.stages.insert(d.name.to_owned(), StageState::Pending);
        }
        let mut now = t(0);
        let mut order = Vec::new();
        let mut closures = closures.into_iter();
        let mut picks = picks.into_iter().cycle();
        for _ in 0..400 {
            snapshot.now = Some(now);
            snapshot.buckets.retain(|_, v| matches!(v, BucketView::Closed { until } if *until > now));
            let p = plan(&graph, &snapshot);
            prop_assert!(p.block.is_empty());
            match p.action {
                Action::Run { stages } => {
                    for stage in stages {
                        for dep in graph.get(&stage).expect("known").depends_on {
                            prop_assert!(order.contains(&dep.to_string()), "{stage} started before {dep} was done");
                        }
                        prop_assert!(snapshot.active.insert(stage.clone()), "{stage} started twice");
                        snapshot.stages.insert(stage, StageState::Running);
                    }
                }
                Action::Await { until } => {
                    // One of the running stages stops (in a random order), or the wait ends.
                    let running: Vec<String> = snapshot.active.iter().cloned().collect();
                    let pick = picks.next().unwrap_or(0);
                    if let Some(until) = until && pick == 7 {
                        prop_assert!(until > now);
                        now = until;
                        continue;
                    }
                    let stage = running[pick % running.len()].clone();
                    snapshot.active.remove(&stage);
                    // Sometimes the stage meets a wait: its bucket closes for a while.
                    if let Some((b, secs)) = closures.next() && graph.get(&stage).expect("known").bucket == BUCKETS[b] {
                        snapshot.buckets.insert(BUCKETS[b].to_owned(), BucketView::Closed { until: now + SignedDuration::from_secs(secs) });
                        snapshot.stages.insert(stage, StageState::Deferred { until: None });
                        continue;
                    }
                    order.push(stage.clone());
                    snapshot.stages.insert(stage, StageState::Done);
                }
                Action::Hibernate { not_before, .. } => {
                    prop_assert!(snapshot.active.is_empty());
                    prop_assert!(not_before > now);
                    now = not_before;
                }
                Action::Finish => break,
            }
        }
        let all: HashMap<_, _> = snapshot.stages.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        prop_assert!(all.values().all(|s| *s == StageState::Done), "not all done: {all:?}");
        prop_assert_eq!(order.len(), graph.stages().len());
    }
}

#[test]
fn a_closed_bucket_lets_the_other_bucket_run() {
    let graph = StageGraph::new(
        vec![
            StageDecl {
                name: "a",
                title: "a",
                bucket: "graphql",
                estimated_cost: 1,
                depends_on: &[],
                after_listing: false,
                scope: Scope::Once,
            },
            StageDecl {
                name: "b",
                title: "b",
                bucket: "graphql",
                estimated_cost: 1,
                depends_on: &["a"],
                after_listing: false,
                scope: Scope::Once,
            },
            StageDecl {
                name: "c",
                title: "c",
                bucket: "core",
                estimated_cost: 1,
                depends_on: &["a"],
                after_listing: false,
                scope: Scope::Once,
            },
        ],
        None,
    )
    .expect("valid");
    let mut s = Snapshot {
        now: Some(t(0)),
        ..Snapshot::default()
    };
    s.stages.insert("a".into(), StageState::Done);
    s.stages.insert("b".into(), StageState::Pending);
    s.stages.insert("c".into(), StageState::Pending);
    s.buckets
        .insert("graphql".into(), BucketView::Closed { until: t(600) });
    assert_eq!(
        plan(&graph, &s).action,
        Action::Run {
            stages: vec!["c".into()]
        }
    );
    // With both open, both start at once.
    let mut both = s.clone();
    both.buckets.clear();
    assert_eq!(
        plan(&graph, &both).action,
        Action::Run {
            stages: vec!["b".into(), "c".into()]
        }
    );
    // While c runs, b's closed bucket is awaited, not hibernated on.
    both.active.insert("c".into());
    both.buckets
        .insert("graphql".into(), BucketView::Closed { until: t(600) });
    assert_eq!(
        plan(&graph, &both).action,
        Action::Await {
            until: Some(t(600))
        }
    );
    // With core closed later than graphql, the wake is graphql's reopening.
    s.buckets
        .insert("core".into(), BucketView::Closed { until: t(3000) });
    match plan(&graph, &s).action {
        Action::Hibernate {
            not_before,
            waiting_on,
            ..
        } => {
            assert_eq!(not_before, t(600));
            assert_eq!(waiting_on, vec!["graphql".to_owned(), "core".to_owned()]);
        }
        other => panic!("expected hibernation, got {other:?}"),
    }
}

/// A stage that starts after the listing runs beside its still-working repository source
/// once the source's list is complete, and not before; a stage without the flag waits for
/// the source to be done; a failed source blocks both.
#[test]
fn a_stage_after_the_listing_starts_beside_its_source() {
    let decl = |name, depends_on, after_listing, scope| StageDecl {
        name,
        title: name,
        bucket: "graphql",
        estimated_cost: 1,
        depends_on,
        after_listing,
        scope,
    };
    let graph = StageGraph::new(
        vec![
            decl("repos", &[], false, Scope::PerRepository),
            decl("early", &["repos"], true, Scope::PerRepository),
            decl("late", &["repos"], false, Scope::PerRepository),
        ],
        Some("repos"),
    )
    .expect("valid");
    let mut s = Snapshot {
        now: Some(t(0)),
        ..Snapshot::default()
    };
    s.stages.insert("repos".into(), StageState::Running);
    s.stages.insert("early".into(), StageState::Pending);
    s.stages.insert("late".into(), StageState::Pending);
    s.active.insert("repos".into());
    // Still listing: nothing else may start.
    assert_eq!(plan(&graph, &s).action, Action::Await { until: None });
    // Listed: the early stage starts beside the source.
    s.listed.insert("repos".into());
    assert_eq!(
        plan(&graph, &s).action,
        Action::Run {
            stages: vec!["early".into()]
        }
    );
    // The source failed after its listing: both are blocked, the early one included.
    s.active.clear();
    s.stages
        .insert("repos".into(), StageState::Failed { reason: "x".into() });
    let blocked: Vec<String> = plan(&graph, &s).block.into_iter().map(|(n, _)| n).collect();
    assert_eq!(blocked, ["early", "late"]);
}
