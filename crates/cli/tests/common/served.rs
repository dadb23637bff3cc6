//! A simulator served in the test's own process on loopback (so a test reads what it holds and
//! changes it between runs), and what the sync commands' JSON lines tell.

use std::collections::BTreeMap;
use std::process::Command;

use headroom_core::clock::TokioClock;
use headroom_sim::{SimConfig, Simulator};
use serde_json::Value;

/// The simulator, served on 127.0.0.1 until the test ends.
pub struct Served {
    pub sim: Simulator,
    /// `http://127.0.0.1:PORT` followed by the provider's prefix (`/api/v4`, `/linear`, none).
    pub api: String,
    _stop: tokio::sync::oneshot::Sender<()>,
}

/// Serves `config` on a free loopback port; `prefix` is the provider's API path.
pub async fn serve(config: SimConfig, prefix: &str) -> Served {
    let sim = Simulator::new(config, TokioClock::system()).expect("simulator");
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind loopback");
    let addr = listener.local_addr().expect("address");
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let served = sim.clone();
    tokio::spawn(async move {
        let _ = headroom_sim::serve(served, listener, None, async {
            let _ = stopped.await;
        })
        .await;
    });
    Served {
        sim,
        api: format!("http://{addr}{prefix}"),
        _stop: stop,
    }
}

/// Runs `cmd` off the runtime: its exit code, stdout and stderr.
pub async fn output(mut cmd: Command) -> (i32, String, String) {
    let out = tokio::task::spawn_blocking(move || cmd.output().expect("runs"))
        .await
        .expect("joins");
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// The completion line's summary, after asserting the run is done.
pub fn completed(code: i32, stdout: &str, stderr: &str) -> Value {
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let done: Value = stdout
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|v| v["event"] == "sync.run_completed")
        .unwrap_or_else(|| panic!("no completion line in {stdout}\n{stderr}"));
    assert_eq!(done["status"], "done", "{done}");
    done["summary"].clone()
}

/// Requests per family the run's summary counted (`actuals`, per stage and family).
pub fn summary_families(summary: &Value) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    let stages = summary["actuals"]
        .as_object()
        .expect("actuals in the summary");
    for rows in stages.values() {
        for row in rows.as_array().expect("rows") {
            let family = row["family"].as_str().expect("family").to_owned();
            let requests = row["requests"].as_u64().expect("requests");
            *out.entry(family).or_default() += requests;
        }
    }
    out
}

/// Row counts of `tables` in the SQLite database at `db`.
pub async fn counts<const N: usize>(
    db: &std::path::Path,
    tables: [&'static str; N],
) -> BTreeMap<&'static str, i64> {
    let queries: Vec<String> = tables
        .iter()
        .map(|t| format!("SELECT COUNT(*) FROM {t}"))
        .collect();
    let queries: Vec<&str> = queries.iter().map(String::as_str).collect();
    let values = super::sqlite_digest(db, &queries).await;
    tables.into_iter().zip(values).collect()
}
