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

const LEVELS: [&str; 5] = ["error", "warn", "info", "debug", "trace"];
const TABLE_START: &str = "<!-- events: generated from crates/core/src/telemetry.rs -->\n";
const TABLE_END: &str = "<!-- end of events -->\n";

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            rust_sources(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The index just past the bracket that closes the one opened at `open`, skipping string and
/// char literals and comments.
fn closing(text: &[u8], open: usize) -> usize {
    let mut depth = 0usize;
    let mut i = open;
    while i < text.len() {
        match text[i] {
            b'(' | b'[' | b'{' => depth += 1,
            b')' | b']' | b'}' => {
                depth -= 1;
                if depth == 0 {
                    return i + 1;
                }
            }
            b'r' if is_raw_string(text, i) => {
                let hashes = text[i + 1..].iter().take_while(|&&b| b == b'#').count();
                let mut end = vec![b'"'];
                end.extend(std::iter::repeat_n(b'#', hashes));
                let body = i + 2 + hashes;
                let len = text[body..]
                    .windows(end.len())
                    .position(|w| w == end.as_slice())
                    .expect("a closed raw string");
                i = body + len + end.len() - 1;
            }
            b'"' => {
                i += 1;
                while text[i] != b'"' {
                    if text[i] == b'\\' {
                        i += 1;
                    }
                    i += 1;
                }
            }
            b'\'' if i + 2 < text.len() && (text[i + 2] == b'\'' || text[i + 1] == b'\\') => {
                i += if text[i + 1] == b'\\' { 3 } else { 2 };
                while text[i] != b'\'' {
                    i += 1;
                }
            }
            b'/' if text.get(i + 1) == Some(&b'/') => {
                while text[i] != b'\n' {
                    i += 1;
                }
            }
            _ => {}
        }
        i += 1;
    }
    panic!("unbalanced bracket at byte {open}");
}

/// `r"…"` or `r#"…"#` starts at `at` (and `r` is not the end of an identifier).
fn is_raw_string(text: &[u8], at: usize) -> bool {
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    if at > 0 && ident(text[at - 1]) {
        return false;
    }
    let hashes = text[at + 1..].iter().take_while(|&&b| b == b'#').count();
    text.get(at + 1 + hashes) == Some(&b'"')
}

/// The source without its inline `#[cfg(test)] mod … { … }` blocks.
fn without_test_modules(source: &str) -> String {
    let mut kept = String::new();
    let mut rest = source;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        if after.trim_start().starts_with("mod ") {
            let open = after.find('{').expect("a test module's body");
            rest = &after[closing(after.as_bytes(), open)..];
        } else {
            rest = after;
        }
    }
    kept.push_str(rest);
    kept
}

/// The top-level comma-separated parts of a macro call's arguments.
fn arguments(body: &str) -> Vec<String> {
    let bytes = body.as_bytes();
    let mut parts = Vec::new();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'(' | b'[' | b'{' | b'"' => {
                i = if bytes[i] == b'"' {
                    let mut j = i + 1;
                    while bytes[j] != b'"' {
                        j += if bytes[j] == b'\\' { 2 } else { 1 };
                    }
                    j + 1
                } else {
                    closing(bytes, i)
                };
                continue;
            }
            b',' => {
                parts.push(body[start..i].trim().to_owned());
                start = i + 1;
            }
            _ => {}
        }
        i += 1;
    }
    let last = body[start..].trim();
    if !last.is_empty() {
        parts.push(last.to_owned());
    }
    parts
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
