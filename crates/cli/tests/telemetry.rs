//! Holds every log call in the workspace's sources to `headroom_core::telemetry::CATALOG`, and
//! docs/LOGGING.md to the catalog.
//!
//! Each `tracing::{error,warn,info,debug,trace}!` call outside inline test modules must name its
//! event by a catalog constant (`event = telemetry::NAME`), at a level the catalog lists, with
//! fields the catalog lists; every catalog entry must be emitted somewhere, and no event name
//! may be written as a string literal. `HEADROOM_WRITE_LOGGING_DOCS=1` rewrites the generated
//! table in docs/LOGGING.md.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use headroom_core::telemetry::{self, CATALOG, EventSpec};
use headroom_testkit::source::{arguments, closing, rust_sources, without_test_modules};

const LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];
const TABLE_START: &str = "<!-- events: generated from crates/core/src/telemetry.rs -->\n";
const TABLE_END: &str = "<!-- end of events -->\n";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// One log call: where, its level, the catalog constant it names and its field names.
#[derive(Debug)]
struct Call {
    at: String,
    level: &'static str,
    event: Option<String>,
    fields: Vec<String>,
}

fn calls_in(path: &Path, source: &str) -> Vec<Call> {
    let mut calls = Vec::new();
    for level in LEVELS {
        let needle = format!("tracing::{level}!(");
        let mut from = 0;
        while let Some(found) = source[from..].find(&needle) {
            let open = from + found + needle.len() - 1;
            let end = closing(source.as_bytes(), open);
            let line = source[..open].matches('\n').count() + 1;
            let mut call = Call {
                at: format!("{}:{line}", path.display()),
                level,
                event: None,
                fields: Vec::new(),
            };
            for part in arguments(&source[open + 1..end - 1]) {
                if part.starts_with('"') {
                    continue; // the message
                }
                let (name, value) = match part.split_once('=') {
                    Some((name, value)) if !value.starts_with('=') => (name.trim(), value.trim()),
                    _ => (part.trim_start_matches(['%', '?']).trim(), ""),
                };
                if name == "event" {
                    call.event = Some(value.to_owned());
                } else {
                    call.fields.push(name.to_owned());
                }
            }
            calls.push(call);
            from = end;
        }
    }
    calls
}

fn all_calls() -> Vec<Call> {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(workspace().join("crates")).expect("crates/") {
        let src = krate.expect("crate").path().join("src");
        if src.is_dir() {
            rust_sources(&src, &mut files);
        }
    }
    assert!(files.len() > 50, "found only {} source files", files.len());
    let mut calls = Vec::new();
    for file in files {
        let source = std::fs::read_to_string(&file).expect("a source file");
        let shown = file
            .strip_prefix(workspace())
            .unwrap_or(&file)
            .to_path_buf();
        calls.extend(calls_in(&shown, &without_test_modules(&source)));
    }
    calls
}

fn by_constant() -> BTreeMap<&'static str, &'static EventSpec> {
    CATALOG.iter().map(|spec| (spec.constant, spec)).collect()
}

#[test]
fn every_log_call_names_a_catalog_event_with_its_listed_fields() {
    let catalog = by_constant();
    let calls = all_calls();
    assert!(calls.len() > 60, "found only {} log calls", calls.len());
    let mut problems = Vec::new();
    let mut emitted = BTreeSet::new();
    let mut fields_used: BTreeMap<&str, BTreeSet<String>> = BTreeMap::new();
    for call in &calls {
        let Some(event) = &call.event else {
            problems.push(format!("{}: no `event = telemetry::…` field", call.at));
            continue;
        };
        let Some(constant) = event.strip_prefix("telemetry::") else {
            problems.push(format!(
                "{}: event `{event}` is not a telemetry constant",
                call.at
            ));
            continue;
        };
        let Some(spec) = catalog.get(constant) else {
            problems.push(format!("{}: `{constant}` is not in the catalog", call.at));
            continue;
        };
        emitted.insert(spec.name);
        if !spec.levels.iter().any(|l| l.as_str() == call.level) {
            problems.push(format!(
                "{}: {} at level {}",
                call.at, spec.name, call.level
            ));
        }
        for field in &call.fields {
            if !spec.fields.contains(&field.as_str()) {
                problems.push(format!("{}: {} has no field `{field}`", call.at, spec.name));
            }
            fields_used
                .entry(spec.name)
                .or_default()
                .insert(field.clone());
        }
    }
    for spec in CATALOG {
        if !emitted.contains(spec.name) {
            problems.push(format!("{} is in the catalog but never emitted", spec.name));
            continue;
        }
        for field in spec.fields {
            if !fields_used[spec.name].contains(*field) {
                problems.push(format!("{} lists `{field}`, which no call sets", spec.name));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn no_event_name_is_spelled_outside_the_catalog() {
    let mut files = Vec::new();
    for krate in std::fs::read_dir(workspace().join("crates")).expect("crates/") {
        let src = krate.expect("crate").path().join("src");
        if src.is_dir() {
            rust_sources(&src, &mut files);
        }
    }
    let mut problems = Vec::new();
    for file in files
        .iter()
        .filter(|f| !f.ends_with("core/src/telemetry.rs"))
    {
        let source = without_test_modules(&std::fs::read_to_string(file).expect("source"));
        for spec in CATALOG {
            if source.contains(&format!("\"{}\"", spec.name)) {
                problems.push(format!("{}: spells \"{}\"", file.display(), spec.name));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

#[test]
fn logging_md_lists_the_catalog() {
    let path = workspace().join("docs/LOGGING.md");
    let doc = std::fs::read_to_string(&path).expect("docs/LOGGING.md exists");
    let (head, rest) = doc
        .split_once(TABLE_START)
        .expect("the table's start marker");
    let (_, tail) = rest.split_once(TABLE_END).expect("the table's end marker");
    let wanted = format!(
        "{head}{TABLE_START}{}{TABLE_END}{tail}",
        telemetry::events_table()
    );
    if std::env::var_os("HEADROOM_WRITE_LOGGING_DOCS").is_some() {
        std::fs::write(&path, &wanted).expect("write docs/LOGGING.md");
        return;
    }
    assert!(
        doc == wanted,
        "docs/LOGGING.md is out of date: HEADROOM_WRITE_LOGGING_DOCS=1 cargo test -p headroom --test telemetry"
    );
}

#[test]
fn the_parser_sees_levels_fields_and_skips_test_modules() {
    let source = "fn a() { tracing::warn!(event = telemetry::X, run_id = %id, count, ?other, \"msg, with comma\"); }\n\
                  #[cfg(test)]\nmod tests { fn b() { tracing::info!(event = \"x\"); } }\n";
    let calls = calls_in(Path::new("x.rs"), &without_test_modules(source));
    assert_eq!(calls.len(), 1, "{calls:?}");
    assert_eq!(calls[0].level, "warn");
    assert_eq!(calls[0].event.as_deref(), Some("telemetry::X"));
    assert_eq!(calls[0].fields, ["run_id", "count", "other"]);
}

/// The one place log lines are formatted masks every field: the only subscriber the sources
/// install writes through `logging::JsonLines`, which passes each field's text through the
/// shared sanitizer, so no log field can carry a credential whoever emitted it.
#[test]
fn every_log_line_leaves_through_the_redacting_layer() {
    let files = headroom_testkit::source::crate_sources(&workspace());
    let mut installs = 0;
    let mut problems = Vec::new();
    for (path, source) in &files {
        if source.contains("tracing_subscriber::fmt()")
            || source.contains("tracing_subscriber::fmt::layer")
            || source.contains("tracing_subscriber::fmt::init")
        {
            problems.push(format!(
                "{}: a fmt subscriber bypasses JsonLines",
                path.display()
            ));
        }
        let mut from = 0;
        while let Some(found) = source[from..].find("tracing_subscriber::registry()") {
            let at = from + found;
            let end = source[at..].find(';').map_or(source.len(), |e| at + e);
            let statement = &source[at..end];
            installs += 1;
            let layers = statement.matches(".with(").count();
            let redacting = statement.contains(".with(logging::JsonLines::new(");
            let filters =
                statement.matches("EnvFilter").count() + statement.matches(".with(filter)").count();
            if !redacting || layers > 1 + filters {
                problems.push(format!(
                    "{}: a subscriber with a layer other than JsonLines: {statement}",
                    path.display()
                ));
            }
            from = end;
        }
    }
    let logging = files
        .iter()
        .find(|(p, _)| p.ends_with("crates/cli/src/logging.rs"))
        .map(|(_, s)| s.as_str())
        .expect("crates/cli/src/logging.rs");
    let put = logging.find("fn put(").expect("JsonLines' field writer");
    let body = &logging[put..closing(
        logging.as_bytes(),
        put + logging[put..].find('{').expect("a body"),
    )];
    if !body.contains("redact(") {
        problems.push("logging.rs: JsonLines' fields skip headroom_core::redact".to_owned());
    }
    assert_eq!(installs, 1, "one subscriber is installed, in main.rs");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
