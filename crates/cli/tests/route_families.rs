//! Holds docs/ROUTE-FAMILIES.md and the workspace's sources to the route-family catalogue
//! (`headroom_core::route::CATALOGUE`).
//!
//! - The docs page is exactly what the catalogue generates (`HEADROOM_WRITE_ROUTE_DOCS=1`
//!   rewrites it).
//! - No source names a family with a string: `ApiRequest::route` takes a `RouteFamily`, and
//!   this scan catches a `.route("snake_case")` anyway (axum's `.route("/…")` is a path).
//! - Every catalogued family is sent somewhere (`route::NAME` outside the catalogue itself),
//!   so the catalogue lists no family the code has stopped sending.

use std::path::{Path, PathBuf};

use headroom_core::route;
use headroom_testkit::source::rust_sources;

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn sources() -> Vec<(PathBuf, String)> {
    let mut paths = Vec::new();
    rust_sources(&workspace().join("crates"), &mut paths);
    assert!(paths.len() > 50, "the scan found the sources");
    paths
        .into_iter()
        .map(|p| {
            let text = std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("{p:?}: {e}"));
            (p, text)
        })
        .collect()
}

#[test]
fn the_docs_page_is_the_catalogue() {
    let path = workspace().join("docs/ROUTE-FAMILIES.md");
    let generated = route::markdown();
    if std::env::var_os("HEADROOM_WRITE_ROUTE_DOCS").is_some() {
        std::fs::write(&path, &generated).expect("write docs/ROUTE-FAMILIES.md");
    }
    let written = std::fs::read_to_string(&path).unwrap_or_default();
    assert!(
        written == generated,
        "docs/ROUTE-FAMILIES.md differs from headroom_core::route::CATALOGUE; regenerate with \
         HEADROOM_WRITE_ROUTE_DOCS=1 cargo test -p headroom --test route_families"
    );
}

#[test]
fn no_source_names_a_family_with_a_string() {
    let this = Path::new(file!()).file_name().expect("file name");
    let mut found = Vec::new();
    for (path, text) in sources() {
        if path.file_name() == Some(this) {
            continue;
        }
        let mut rest = text.as_str();
        while let Some(at) = rest.find(".route(") {
            rest = &rest[at + ".route(".len()..];
            let arg = rest.trim_start();
            // A family-like literal: `"snake_case"` (paths start with `/`; the scanners of
            // other tests mention `.route("` inside their own strings).
            let Some(literal) = arg.strip_prefix('"') else {
                continue;
            };
            let name: String = literal
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                .collect();
            if !name.is_empty() && literal[name.len()..].starts_with('"') {
                found.push(format!("{}: .route(\"{name}\"", path.display()));
            }
        }
    }
    assert!(found.is_empty(), "families named by strings: {found:#?}");
}

#[test]
fn every_catalogued_family_is_sent_somewhere() {
    let sources = sources();
    let catalogue = workspace().join("crates/core/src/route.rs");
    let text = std::fs::read_to_string(&catalogue).expect("route.rs");
    let constants: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("pub const "))
        .filter_map(|l| l.split_once(": RouteFamily ").map(|(name, _)| name))
        .collect();
    assert_eq!(
        constants.len(),
        route::CATALOGUE.len(),
        "every constant is in CATALOGUE"
    );
    for name in constants {
        let used = sources.iter().any(|(path, text)| {
            *path != catalogue
                && !path.components().any(|c| c.as_os_str() == "tests")
                && text.contains(&format!("route::{name}"))
        });
        assert!(used, "route::{name} is catalogued but no source sends it");
    }
}
