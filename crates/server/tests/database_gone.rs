//! The server over a database that goes away under it, opened as `headroom serve` opens it
//! (`open_report`):
//!
//! - PostgreSQL stops answering (the test reaches it through a loopback proxy it then shuts,
//!   so the shared test server keeps running): a request answers 503 within the serving
//!   pool's short wait, saying the database is unreachable — not after 30 s.
//! - The SQLite file is deleted or replaced: readiness turns 503 and says so, rather than
//!   answer ok from the connections still reading the deleted file. (That no empty file is
//!   created in its place is the store's test, `sqlite::tests`.)

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::http::StatusCode;
use common::{at, get};
use headroom_core::clock::{Clock as _, ManualClock, SignedDuration, SystemClock};
use headroom_server::AppState;
use headroom_store::feed_report::open_report;
use tokio::task::JoinHandle;

/// The router over the store `target` names, opened for serving.
async fn served(target: &str) -> axum::Router {
    let (_, feed, report) = open_report(target).await.expect("open");
    headroom_server::router(AppState {
        report,
        feed,
        clock: Arc::new(ManualClock::new(at(60))),
        settings: Arc::new(common::settings()),
        status: Default::default(),
    })
}

/// A TCP proxy on loopback to `upstream`; dropping [`Proxy::shut`]'s tasks closes the
/// listener and every connection through it, so the database behind looks down.
struct Proxy {
    addr: std::net::SocketAddr,
    tasks: Arc<Mutex<Vec<JoinHandle<()>>>>,
}

impl Proxy {
    async fn to(upstream: String) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let addr = listener.local_addr().expect("addr");
        let tasks: Arc<Mutex<Vec<JoinHandle<()>>>> = Arc::default();
        let spawned = tasks.clone();
        let acceptor = tokio::spawn(async move {
            while let Ok((mut client, _)) = listener.accept().await {
                let upstream = upstream.clone();
                let pipe = tokio::spawn(async move {
                    if let Ok(mut server) = tokio::net::TcpStream::connect(upstream).await {
                        let _ = tokio::io::copy_bidirectional(&mut client, &mut server).await;
                    }
                });
                spawned.lock().unwrap().push(pipe);
            }
        });
        tasks.lock().unwrap().push(acceptor);
        Self { addr, tasks }
    }

    fn shut(&self) {
        for task in self.tasks.lock().unwrap().drain(..) {
            task.abort();
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_postgresql_is_said_within_seconds_not_after_thirty() {
    let Some(admin) = common::admin_url("an_unreachable_postgresql") else {
        return;
    };
    let db = common::PgDatabase::create(&admin).await;
    let upstream = format!("{}:{}", db.options.get_host(), db.options.get_port());
    let proxy = Proxy::to(upstream.clone()).await;
    let through_proxy = db.url().replace(&upstream, &proxy.addr.to_string());
    assert_ne!(through_proxy, db.url(), "the URL goes through the proxy");
    let app = served(&through_proxy).await;
    assert_eq!(get(&app, "/api/push_events").await.status, StatusCode::OK);

    proxy.shut();
    for path in ["/api/push_events", "/health/ready"] {
        let started = SystemClock.now();
        // Bounded well below the 30 s a worker's pool waits, so the old wait fails here.
        let reply = tokio::time::timeout(Duration::from_secs(15), get(&app, path))
            .await
            .expect("answered within 15 s");
        let took = SystemClock.now().duration_since(started);
        let wait = SignedDuration::try_from(headroom_store::postgres::SERVE_ACQUIRE_TIMEOUT)
            .expect("fits");
        assert!(
            took < wait + SignedDuration::from_secs(3),
            "{path} took {took:#}"
        );
        assert_eq!(
            reply.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{}",
            reply.text
        );
        let message = if path == "/health/ready" {
            assert_eq!(
                reply.json["reason"], "database_unreachable",
                "{}",
                reply.text
            );
            reply.json["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        } else {
            assert_eq!(reply.json["error"]["code"], "database_unavailable");
            reply.json["error"]["message"]
                .as_str()
                .unwrap_or_default()
                .to_owned()
        };
        assert!(message.contains("unreachable"), "{path}: {message}");
    }
    // The process itself is fine.
    assert_eq!(get(&app, "/health/live").await.status, StatusCode::OK);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deleted_or_replaced_sqlite_file_makes_the_server_not_ready() {
    let dir = tempfile::tempdir().expect("dir");
    for how in ["deleted", "replaced"] {
        let path = dir.path().join(format!("{how}.db"));
        let target = path.to_str().expect("utf-8").to_owned();
        let app = served(&target).await;
        assert_eq!(get(&app, "/health/ready").await.status, StatusCode::OK);
        if how == "deleted" {
            std::fs::remove_file(&path).expect("delete");
        } else {
            // Another headroom database moved over it, as a restore from a copy would be.
            let other = dir.path().join("other.db");
            let store = headroom_store::SqliteStore::open(other.to_str().expect("utf-8"))
                .await
                .expect("open");
            store.pool().close().await;
            std::fs::rename(&other, &path).expect("replace");
        }
        let reply = get(&app, "/health/ready").await;
        assert_eq!(
            reply.status,
            StatusCode::SERVICE_UNAVAILABLE,
            "{how}: {}",
            reply.text
        );
        assert_eq!(reply.json["reason"], "database_unreachable", "{how}");
        let message = reply.json["message"].as_str().unwrap_or_default();
        assert!(message.contains(how), "{how}: {message}");
    }
}
