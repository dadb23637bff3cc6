//! What connected dashboards cost an idle service: the dashboard router served on loopback
//! over an SQLite store, with 0 and then 100 clients holding `GET /api/events` open, each
//! phase measured as this process's CPU time (user + system, from `/proc/self/stat`) over
//! the same wall time; then 100 clients while one quota reading is recorded every second, so
//! every stream sends a snapshot each second. Prints one line per phase.
//!
//! `cargo bench -p headroom-server --bench event_streams` (about a minute and a half).
//! Target: 100 idle clients under 5 % of one core.

#![allow(clippy::expect_used)]

use std::sync::Arc;
use std::time::Duration;

use headroom_core::clock::{Clock as _, SignedDuration, SystemClock, TokioClock};
use headroom_github::feed::enrich::EnrichSettings;
use headroom_github::feed::poll::PollSettings;
use headroom_server::{
    AppState, DashboardSettings, DashboardState, Reporting, SchedulerSettings, StatusSettings,
};
use headroom_store::quota_history::QuotaRecorder as _;
use headroom_store::{QuotaReading, SqliteStore};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;

const CLIENTS: usize = 100;
const PHASE: Duration = Duration::from_secs(20);

/// This process's CPU time so far (user + system), from `/proc/self/stat` in clock ticks of
/// 10 ms (Linux's USER_HZ).
fn cpu_time() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // Fields after the command name (which may hold spaces) start at the last ')'.
    let rest = &stat[stat.rfind(')').expect("a command name") + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 =
        fields[11].parse::<u64>().expect("utime") + fields[12].parse::<u64>().expect("stime");
    Duration::from_millis(ticks * 10)
}

fn reading(remaining: u64) -> QuotaReading {
    QuotaReading {
        provider: "github".into(),
        host: "api.github.com".into(),
        subject: "user:alice".into(),
        bucket: "core".into(),
        limit: Some(5000),
        remaining: Some(remaining),
        used: Some(5000 - remaining),
        reset_at: Some(SystemClock.now() + SignedDuration::from_secs(1800)),
        in_flight: 1,
        waiting: 0,
        blocked_until: None,
        last_reason: None,
        process_id: "bench".into(),
        observed_at: SystemClock.now(),
    }
}

fn dashboard(store: &SqliteStore) -> DashboardState {
    let server = Arc::new(store.clone());
    let clock: headroom_core::clock::SharedClock = Arc::new(SystemClock);
    let settings = StatusSettings {
        host: "api.github.com".into(),
        subject: None,
        scheduler: SchedulerSettings::of(
            &PollSettings::default(),
            &EnrichSettings::default(),
            None,
            Reporting::default(),
        )
        .expect("defaults"),
    };
    DashboardState {
        app: AppState {
            report: server.clone(),
            feed: server.clone(),
            clock: clock.clone(),
            settings: Arc::new(settings),
            status: Default::default(),
        },
        store: server.clone(),
        history: server,
        clock,
        settings: DashboardSettings::default(),
        pacer: TokioClock::system(),
        snapshots: Default::default(),
    }
}

/// Opens one event stream and waits for its first snapshot; the stream is then read (and
/// counted) until the process ends.
async fn client(addr: std::net::SocketAddr, received: Arc<std::sync::atomic::AtomicU64>) {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream
        .write_all(b"GET /api/events HTTP/1.1\r\nHost: bench\r\nAccept: text/event-stream\r\n\r\n")
        .await
        .expect("request");
    let mut buffer = vec![0u8; 64 * 1024];
    let mut seen = String::new();
    while !seen.contains("event: snapshot") {
        let n = stream.read(&mut buffer).await.expect("read");
        assert!(n > 0, "the stream closed before its first snapshot");
        seen.push_str(&String::from_utf8_lossy(&buffer[..n]));
    }
    received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    tokio::spawn(async move {
        loop {
            match stream.read(&mut buffer).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if String::from_utf8_lossy(&buffer[..n]).contains("event: snapshot") {
                        received.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    }
                }
            }
        }
    });
}

async fn phase(name: &str, pacer: TokioClock, during: impl std::future::Future<Output = ()>) {
    let (cpu, wall) = (cpu_time(), SystemClock.now());
    tokio::select! {
        () = pacer.sleep(SignedDuration::try_from(PHASE).expect("fits")) => {}
        () = during => {}
    }
    let wall = Duration::try_from(SystemClock.now().duration_since(wall)).unwrap_or_default();
    let cpu = cpu_time() - cpu;
    println!(
        "{name:<48} {:>6.0} ms CPU over {:>4.1} s = {:>5.2} % of a core",
        cpu.as_secs_f64() * 1000.0,
        wall.as_secs_f64(),
        100.0 * cpu.as_secs_f64() / wall.as_secs_f64()
    );
}

fn main() {
    if std::env::args().any(|a| a == "--list") {
        return; // `cargo bench -- --list` and test harness probes
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("streams.db");
        let store = SqliteStore::open(path.to_str().expect("utf-8"))
            .await
            .expect("open");
        store
            .record_quota_reading(&reading(4000))
            .await
            .expect("reading");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let state = dashboard(&store);
        tokio::spawn(headroom_server::serve_dashboard(
            listener,
            state,
            std::future::pending(),
        ));
        let pacer = TokioClock::system();
        phase("idle service, no client", pacer, std::future::pending()).await;

        let received = Arc::new(std::sync::atomic::AtomicU64::new(0));
        for _ in 0..CLIENTS {
            client(addr, received.clone()).await;
        }
        phase(
            &format!("idle service, {CLIENTS} event-stream clients"),
            pacer,
            std::future::pending(),
        )
        .await;

        let before = received.load(std::sync::atomic::Ordering::Relaxed);
        let writes = async {
            let mut remaining = 3999;
            loop {
                store
                    .record_quota_reading(&reading(remaining))
                    .await
                    .expect("reading");
                remaining -= 1;
                pacer.sleep(SignedDuration::from_secs(1)).await;
            }
        };
        phase(
            &format!("{CLIENTS} clients, a new reading every second"),
            pacer,
            writes,
        )
        .await;
        let sent = received.load(std::sync::atomic::Ordering::Relaxed) - before;
        println!("snapshots received by the clients meanwhile: {sent}");
    });
}
