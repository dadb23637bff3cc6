//! The crate graph is the one ARCHITECTURE.md draws: each crate's normal dependencies on other
//! headroom crates are exactly its allowed ones, the simulator reaches the exit door only
//! behind its `sim` feature, and no dev-dependency closes a cycle.

#![allow(clippy::expect_used)]

use std::collections::{BTreeMap, BTreeSet};
use std::process::Command;

use serde_json::Value;

/// Normal dependencies each crate may have on the others (the binary may use any).
const ALLOWED: &[(&str, &[&str])] = &[
    ("headroom-core", &[]),
    ("headroom-http", &["headroom-core", "headroom-sim"]),
    ("headroom-store", &["headroom-core"]),
    (
        "headroom-sync",
        &["headroom-core", "headroom-store", "headroom-http"],
    ),
    (
        "headroom-github",
        &[
            "headroom-core",
            "headroom-http",
            "headroom-store",
            "headroom-sync",
        ],
    ),
    (
        "headroom-gitlab",
        &[
            "headroom-core",
            "headroom-http",
            "headroom-store",
            "headroom-sync",
        ],
    ),
    (
        "headroom-server",
        &[
            "headroom-core",
            "headroom-store",
            "headroom-github",
            "headroom-gitlab",
            "headroom-jira",
            "headroom-linear",
            "headroom-launchdarkly",
        ],
    ),
    (
        "headroom-jira",
        &[
            "headroom-core",
            "headroom-http",
            "headroom-store",
            "headroom-sync",
        ],
    ),
    (
        "headroom-linear",
        &[
            "headroom-core",
            "headroom-http",
            "headroom-store",
            "headroom-sync",
        ],
    ),
    (
        "headroom-launchdarkly",
        &[
            "headroom-core",
            "headroom-http",
            "headroom-store",
            "headroom-sync",
        ],
    ),
    ("headroom-sim", &["headroom-core"]),
    ("headroom-testkit", &[]),
];

#[test]
fn dependencies_point_one_way() {
    let out = Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metadata: Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let allowed: BTreeMap<&str, BTreeSet<&str>> = ALLOWED
        .iter()
        .map(|(name, deps)| (*name, deps.iter().copied().collect()))
        .collect();
    // Every edge between headroom crates, dev-dependencies included: (from, to, kind).
    let mut edges = Vec::new();
    let mut crates = Vec::new();
    for package in metadata["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("name");
        crates.push(name.to_owned());
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let to = dep["name"].as_str().expect("name");
            if !to.starts_with("headroom") {
                continue;
            }
            let kind = dep["kind"].as_str().unwrap_or("normal").to_owned();
            if kind == "normal" && name != "headroom" {
                let ok = allowed.get(name).is_some_and(|a| a.contains(to));
                assert!(ok, "{name} must not depend on {to}");
                if name == "headroom-http" && to == "headroom-sim" {
                    assert_eq!(dep["optional"], true, "the simulator only behind a feature");
                    let feature = &package["features"]["sim"];
                    assert!(
                        feature.to_string().contains("headroom-sim"),
                        "headroom-http's `sim` feature brings the simulator: {feature}"
                    );
                }
            }
            edges.push((name.to_owned(), to.to_owned(), kind));
        }
    }
    for name in &crates {
        assert!(
            name == "headroom" || allowed.contains_key(name.as_str()),
            "{name} is not in the crate graph: add it here and to ARCHITECTURE.md"
        );
    }
    // No cycle through any kind of edge: a crate reaches itself through none.
    let next = |from: &str| -> Vec<String> {
        edges
            .iter()
            .filter(|(f, t, _)| f == from && t != from)
            .map(|(_, t, _)| t.clone())
            .collect()
    };
    for start in &crates {
        let mut seen = BTreeSet::new();
        let mut todo = next(start);
        while let Some(c) = todo.pop() {
            assert!(c != *start, "a dependency cycle through {start}");
            if seen.insert(c.clone()) {
                todo.extend(next(&c));
            }
        }
    }
}
