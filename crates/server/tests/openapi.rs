//! `/openapi.json` is generated from the handlers; these tests pin it.
//!
//! - The committed snapshot `docs/openapi.json` equals the generated document, so a change to
//!   an endpoint's shape shows up in review. `HEADROOM_WRITE_OPENAPI=1 cargo test -p
//!   headroom-server --test openapi` rewrites it.
//! - Every route the router declares (read from the router's source, `.route("…")`) is in the
//!   document, and every documented path is served — a route added without its
//!   `#[utoipa::path]` fails here.
//! - The endpoint serves the same document.
//!
//! That every JSON answer matches its documented schema is checked by the other test
//! binaries: their request helper validates each answer against this document.

#![allow(clippy::expect_used, clippy::unwrap_used)]

mod common;

use std::collections::BTreeSet;
use std::path::Path;

use axum::http::StatusCode;
use serde_json::Value;

fn repository_root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .and_then(Path::parent)
        .expect("crates/server sits two levels below the root")
}

#[test]
fn the_committed_snapshot_is_the_generated_document() {
    let generated = headroom_server::openapi::json() + "\n";
    let snapshot = repository_root().join("docs/openapi.json");
    if std::env::var_os("HEADROOM_WRITE_OPENAPI").is_some() {
        std::fs::write(&snapshot, &generated).expect("write docs/openapi.json");
    }
    let committed = std::fs::read_to_string(&snapshot).expect("docs/openapi.json exists");
    assert!(
        committed == generated,
        "docs/openapi.json differs from the generated document; regenerate it with \
         HEADROOM_WRITE_OPENAPI=1 cargo test -p headroom-server --test openapi"
    );
}

/// The paths the router's source declares.
fn routed_paths() -> BTreeSet<String> {
    let source = std::fs::read_to_string(repository_root().join("crates/server/src/lib.rs"))
        .expect("the router's source");
    let mut paths = BTreeSet::new();
    let mut rest = source.as_str();
    while let Some(at) = rest.find(".route(") {
        rest = &rest[at + ".route(".len()..];
        let start = rest.find('"').expect("a route path literal") + 1;
        let len = rest[start..].find('"').expect("a closing quote");
        paths.insert(rest[start..start + len].to_owned());
    }
    paths
}

#[test]
fn every_route_is_documented_and_every_documented_path_is_routed() {
    let document: Value =
        serde_json::from_str(&headroom_server::openapi::json()).expect("the document is JSON");
    let documented: BTreeSet<String> = document["paths"]
        .as_object()
        .expect("paths")
        .keys()
        .cloned()
        .collect();
    let routed = routed_paths();
    assert!(
        routed.len() >= 13,
        "the router's routes were not found: {routed:?}"
    );
    assert_eq!(
        routed, documented,
        "routes and documented paths differ (left: routed, right: documented)"
    );
    for (path, item) in document["paths"].as_object().expect("paths") {
        let operation = &item["get"];
        assert!(operation.is_object(), "{path}: only GET is served");
        assert!(
            operation["responses"]["200"].is_object(),
            "{path} documents no 200"
        );
        assert!(
            operation["description"].is_string() || operation["summary"].is_string(),
            "{path} has no description"
        );
    }
}

#[tokio::test]
async fn the_endpoint_serves_the_document() {
    let app = axum::Router::new().route(
        "/openapi.json",
        axum::routing::get(headroom_server::openapi::document),
    );
    let reply = common::get(&app, "/openapi.json").await;
    assert_eq!(reply.status, StatusCode::OK, "{}", reply.text);
    let generated: Value =
        serde_json::from_str(&headroom_server::openapi::json()).expect("the document is JSON");
    assert_eq!(reply.json, generated);
    assert_eq!(reply.json["openapi"], "3.1.0");
    let refused = common::get(&app, "/openapi.json?x=1").await;
    assert_eq!(refused.status, StatusCode::BAD_REQUEST, "{}", refused.text);
}

/// The schema check the other tests lean on catches a drifted body (a control: a check that
/// passed everything would pass this too).
#[test]
fn a_body_that_drifts_from_the_document_is_caught() {
    let drifted = serde_json::json!({"identities": []});
    let caught = std::panic::catch_unwind(|| {
        common::document::conforms("/api/quota", 200, &drifted);
    });
    assert!(
        caught.is_err(),
        "a quota document without captured_at passed"
    );
    let undeclared = std::panic::catch_unwind(|| {
        common::document::conforms("/api/quota", 418, &serde_json::json!({}));
    });
    assert!(undeclared.is_err(), "an undeclared status passed");
    common::document::conforms(
        "/api/quota",
        200,
        &serde_json::json!({"captured_at": "2027-01-15T08:00:00Z", "identities": []}),
    );
}

#[test]
fn every_operation_has_an_id_of_its_own() {
    let document: Value =
        serde_json::from_str(&headroom_server::openapi::json()).expect("the document is JSON");
    let mut seen = BTreeSet::new();
    let mut repeated = Vec::new();
    for (path, operations) in document["paths"].as_object().expect("paths") {
        for (method, operation) in operations.as_object().expect("operations") {
            let id = operation["operationId"].as_str().expect("an operation id");
            if !seen.insert(id.to_owned()) {
                repeated.push(format!("{method} {path}: `{id}`"));
            }
        }
    }
    assert!(
        repeated.is_empty(),
        "operation ids used twice: {repeated:?}"
    );
}

/// An OpenAPI validator that is not ours reads the committed document: `openapi-spec-validator`
/// (PyPI), which `scripts/test` installs under CI. Without it the test says it was skipped and
/// why, except under CI, where it fails.
#[test]
fn the_document_passes_an_independent_openapi_validator() {
    let probe = std::process::Command::new("python3")
        .args(["-c", "import openapi_spec_validator"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        let why = "python3 with openapi-spec-validator is not installed \
                   (python3 -m pip install openapi-spec-validator)";
        headroom_testkit::skip("the_document_passes_an_independent_openapi_validator", why);
        return;
    }
    let out = std::process::Command::new("python3")
        .args(["-m", "openapi_spec_validator"])
        .arg(repository_root().join("docs/openapi.json"))
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "openapi-spec-validator refused docs/openapi.json:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
