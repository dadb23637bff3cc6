//! The source-level guard of stored diagnostics: every SQL statement in headroom-store that
//! writes a column of [`DIAGNOSTIC_COLUMNS`] from a parameter binds a value that passed
//! through the shared sanitizer (`headroom_core::redact`); and every free-text column the
//! migrations create is either such a column or exempted here with its reason.
//!
//! Redaction is proven where it is applied, at the store's edge, not where a caller
//! remembered it: a caller that hands the store a provider's error text cannot bypass it.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use headroom_store::scrub::DIAGNOSTIC_COLUMNS;
use headroom_testkit::source::{arguments, closing, rust_sources, without_test_modules};

/// Free-text columns that are not diagnostics, and why.
const EXEMPT: &[(&str, &str, &str)] = &[
    (
        "rate_limit_observations",
        "reason",
        "a CHECK-constrained vocabulary",
    ),
    (
        "rate_limit_observations",
        "wait_reason",
        "a CHECK-constrained vocabulary",
    ),
    (
        "rate_limit_events_pruned",
        "reason",
        "a copy of rate_limit_observations.reason (CHECK-constrained), or empty",
    ),
    (
        "rate_limit_events_pruned",
        "wait_reason",
        "a copy of rate_limit_observations.wait_reason (CHECK-constrained), or empty",
    ),
    (
        "quarantined_events",
        "error_code",
        "headroom's own validation codes",
    ),
    (
        "enrichment_batches",
        "error_code",
        "headroom's own outcome codes",
    ),
    (
        "actors",
        "detail_url",
        "a GitHub API URL checked against its entity's shape before it is stored",
    ),
    (
        "repositories",
        "detail_url",
        "a GitHub API URL checked against its entity's shape before it is stored",
    ),
    (
        "pull_request_commits",
        "message_headline",
        "collected data (a commit's first line), kept as the provider wrote it",
    ),
    (
        "jira_issues",
        "summary",
        "collected data (an issue's title), kept as the provider wrote it",
    ),
];

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn diagnostic_names() -> BTreeSet<&'static str> {
    DIAGNOSTIC_COLUMNS.iter().map(|c| c.column).collect()
}

/// A string literal: its text and where it starts and ends in the source.
struct Literal {
    text: String,
    start: usize,
    end: usize,
}

/// Every ordinary string literal of `source` (escaped line continuations folded).
fn literals(source: &str) -> Vec<Literal> {
    let bytes = source.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'/' if bytes.get(i + 1) == Some(&b'/') => {
                while i < bytes.len() && bytes[i] != b'\n' {
                    i += 1;
                }
            }
            b'\'' if i + 2 < bytes.len() && (bytes[i + 2] == b'\'' || bytes[i + 1] == b'\\') => {
                i += if bytes[i + 1] == b'\\' { 3 } else { 2 };
                while i < bytes.len() && bytes[i] != b'\'' {
                    i += 1;
                }
            }
            b'"' => {
                let start = i;
                let mut text = String::new();
                i += 1;
                while i < bytes.len() && bytes[i] != b'"' {
                    if bytes[i] == b'\\' {
                        i += 1;
                        if bytes.get(i) == Some(&b'\n') {
                            while i + 1 < bytes.len() && bytes[i + 1].is_ascii_whitespace() {
                                i += 1;
                            }
                            text.push(' ');
                        } else {
                            text.push(bytes[i] as char);
                        }
                    } else {
                        text.push(bytes[i] as char);
                    }
                    i += 1;
                }
                out.push(Literal {
                    text,
                    start,
                    end: i + 1,
                });
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The placeholder numbers a write statement fills diagnostic columns from, or a problem.
fn diagnostic_placeholders(
    sql: &str,
    names: &BTreeSet<&str>,
) -> Result<Vec<(String, usize)>, String> {
    let upper = sql.to_ascii_uppercase();
    let mut found = Vec::new();
    if let Some(at) = upper.find("INSERT INTO") {
        let open = sql[at..]
            .find('(')
            .map(|o| at + o)
            .ok_or("an INSERT without columns")?;
        let close = sql[open..]
            .find(')')
            .map(|c| open + c)
            .ok_or("unclosed column list")?;
        let columns: Vec<&str> = sql[open + 1..close].split(',').map(str::trim).collect();
        if columns.iter().any(|c| names.contains(c)) {
            let values_at = upper[close..]
                .find("VALUES")
                .map(|v| close + v)
                .ok_or("an INSERT of a diagnostic column whose values cannot be read")?;
            let vopen = sql[values_at..]
                .find('(')
                .map(|o| values_at + o)
                .ok_or("no VALUES list")?;
            let vclose = closing(sql.as_bytes(), vopen);
            let values: Vec<&str> = sql[vopen + 1..vclose - 1]
                .split(',')
                .map(str::trim)
                .collect();
            if values.len() != columns.len() {
                return Err("an INSERT whose columns and values do not pair".into());
            }
            for (column, value) in columns.iter().zip(&values) {
                if names.contains(column)
                    && let Some(n) = placeholder(value)
                {
                    found.push(((*column).to_owned(), n));
                }
            }
        }
    }
    if upper.contains("UPDATE ") {
        for name in names {
            let mut from = 0;
            while let Some(at) = sql[from..].find(name) {
                let start = from + at;
                from = start + name.len();
                let before_ok = start == 0
                    || !sql.as_bytes()[start - 1].is_ascii_alphanumeric()
                        && sql.as_bytes()[start - 1] != b'_'
                        && sql.as_bytes()[start - 1] != b'.';
                let rest = sql[from..].trim_start();
                if before_ok && rest.starts_with('=') && !rest.starts_with("==") {
                    let value: String = rest[1..]
                        .trim_start()
                        .chars()
                        .take_while(|c| !matches!(c, ',' | ' ' | ')'))
                        .collect();
                    if let Some(n) = placeholder(&value) {
                        found.push(((*name).to_owned(), n));
                    }
                }
            }
        }
    }
    Ok(found)
}

/// `$N` or `?N` as N.
fn placeholder(value: &str) -> Option<usize> {
    let digits = value
        .strip_prefix('$')
        .or_else(|| value.strip_prefix('?'))?;
    digits.parse().ok()
}

/// The values bound after `from`: the `.bind(…)` chain up to the statement's execution, or
/// the elements of the first `params![…]`.
fn bound_values(source: &str, from: usize) -> Vec<String> {
    let rest = &source[from..];
    let ends = [
        ".execute(",
        ".fetch_one(",
        ".fetch_optional(",
        ".fetch_all(",
        ".fetch(",
    ];
    let stop = ends
        .iter()
        .filter_map(|e| rest.find(e))
        .min()
        .unwrap_or(rest.len());
    let params = rest.find("params![");
    if let Some(p) = params.filter(|&p| p < stop || !rest[..stop].contains(".bind(")) {
        let open = from + p + "params!".len();
        let close = closing(source.as_bytes(), open);
        return arguments(&source[open + 1..close - 1]);
    }
    let mut values = Vec::new();
    let mut at = 0;
    while let Some(found) = rest[at..stop].find(".bind(") {
        let open = from + at + found + ".bind".len();
        let close = closing(source.as_bytes(), open);
        values.push(source[open + 1..close - 1].trim().to_owned());
        at = close - from;
    }
    values
}

/// Where the statement in `literal` is sent from: the literal itself, or every use of the
/// constant it defines (through a function that only rewrites it, and through a prepared
/// statement's variable).
fn uses(files: &[(PathBuf, String)], source: &str, literal: &Literal) -> Vec<(usize, usize)> {
    let before = source[..literal.start].trim_end();
    let Some(name) = before
        .strip_suffix('=')
        .map(str::trim_end)
        .and_then(|b| {
            b.strip_suffix("&str")
                .or_else(|| b.strip_suffix("&'static str"))
        })
        .map(str::trim_end)
        .and_then(|b| b.strip_suffix(':'))
        .and_then(|b| b.split_whitespace().last())
        .filter(|n| n.chars().all(|c| c.is_ascii_uppercase() || c == '_'))
    else {
        return vec![(usize::MAX, literal.end)];
    };
    let mut names = vec![name.to_owned()];
    let mut sites = Vec::new();
    while let Some(name) = names.pop() {
        for (index, (_, text)) in files.iter().enumerate() {
            let mut from = 0;
            while let Some(found) = text[from..].find(name.as_str()) {
                let at = from + found;
                from = at + name.len();
                let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
                if (at > 0 && ident(text.as_bytes()[at - 1]))
                    || text.as_bytes().get(from).copied().is_some_and(ident)
                    || text[..at].trim_end().ends_with("const")
                    || text[..at].trim_end().ends_with("fn")
                {
                    continue;
                }
                // Inside a function that returns the statement rewritten: its callers send it.
                let line_start = text[..at].rfind("\n").unwrap_or(0);
                if let Some(fn_at) = text[..at].rfind("fn ") {
                    let head = &text[fn_at..at];
                    if head.contains("-> String")
                        && !head.contains(".bind(")
                        && fn_at > line_start.saturating_sub(400)
                    {
                        let fn_name: String = text[fn_at + 3..]
                            .chars()
                            .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                            .collect();
                        names.push(format!("{fn_name}("));
                        continue;
                    }
                }
                // A prepared statement: its executions carry the values.
                let stmt_start = text[..at].rfind(';').map_or(0, |s| s + 1);
                let statement = &text[stmt_start..at];
                if statement.contains("prepare")
                    && let Some(var) = statement
                        .split("let mut ")
                        .nth(1)
                        .and_then(|s| s.split_whitespace().next())
                {
                    for call in [".query_row(", ".execute(", ".query("] {
                        let needle = format!("{var}{call}");
                        let mut f = at;
                        while let Some(found) = text[f..].find(&needle) {
                            sites.push((index, f + found));
                            f += found + needle.len();
                        }
                    }
                    continue;
                }
                sites.push((index, at));
            }
        }
    }
    sites
}

fn store_sources() -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_sources(&workspace().join("crates/store/src"), &mut files);
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("a source file");
            (f, without_test_modules(&text))
        })
        .collect()
}

/// Every problem in `files`: a diagnostic column filled from a value that skipped redaction,
/// or a statement the guard cannot read.
fn problems_in(files: &[(PathBuf, String)]) -> (Vec<String>, usize) {
    let names = diagnostic_names();
    let mut problems = Vec::new();
    let mut checked = 0;
    for (path, source) in files {
        for literal in literals(source) {
            let upper = literal.text.to_ascii_uppercase();
            if !(upper.contains("INSERT INTO") || upper.contains("UPDATE ")) {
                continue;
            }
            let line = source[..literal.start].matches('\n').count() + 1;
            let at = format!("{}:{line}", path.display());
            let wanted = match diagnostic_placeholders(&literal.text, &names) {
                Ok(w) if w.is_empty() => continue,
                Ok(w) => w,
                Err(problem) => {
                    problems.push(format!("{at}: {problem}"));
                    continue;
                }
            };
            let sites = uses(files, source, &literal);
            if sites.is_empty() {
                problems.push(format!(
                    "{at}: a statement writing diagnostics is never sent"
                ));
            }
            for (file, from) in sites {
                let text = if file == usize::MAX {
                    source
                } else {
                    &files[file].1
                };
                let values = bound_values(text, from);
                for (column, n) in &wanted {
                    checked += 1;
                    match values.get(n - 1) {
                        Some(v) if v.contains("redact") => {}
                        Some(v) => problems.push(format!(
                            "{at}: `{column}` is written from `{v}` without headroom_core::redact"
                        )),
                        None => problems.push(format!(
                            "{at}: `{column}` takes parameter {n}, which the guard cannot find bound"
                        )),
                    }
                }
            }
        }
    }
    (problems, checked)
}

#[test]
fn every_write_of_a_stored_diagnostic_passes_the_shared_redaction() {
    let files = store_sources();
    assert!(files.len() > 20, "found only {} store sources", files.len());
    let (problems, checked) = problems_in(&files);
    assert!(problems.is_empty(), "{}", problems.join("\n"));
    // Each column is written somewhere; a guard that found nothing would prove nothing.
    assert!(
        checked >= DIAGNOSTIC_COLUMNS.len(),
        "only {checked} writes checked"
    );
}

#[test]
fn the_guard_catches_a_diagnostic_written_raw() {
    let source = r#"
const SQL: &str = "INSERT INTO sync_checkpoints (sync_run_id, detail) VALUES ($1, $2)";
fn write(u: &U) { sqlx::query(SQL).bind(u.id).bind(u.detail.clone()).execute(pool); }
fn update(e: &E) {
    sqlx::query("UPDATE event_sources SET last_error = $2 WHERE id = $1")
        .bind(e.id).bind(redact(&e.error)).execute(pool);
}
fn bulk(conn: &C, e: &E) {
    let mut quarantine = conn.prepare_cached(QSQL)?;
    quarantine.query_row(params![e.fingerprint, e.error_message], |r| r.get(0));
}
const QSQL: &str = "INSERT INTO quarantined_events (payload_fingerprint, error_message) VALUES (?1, ?2)";
"#;
    let files = vec![(PathBuf::from("x.rs"), source.to_owned())];
    let (problems, checked) = problems_in(&files);
    assert_eq!(checked, 3, "{problems:?}");
    assert_eq!(problems.len(), 2, "{problems:?}");
    assert!(problems[0].contains("`detail` is written from `u.detail.clone()`"));
    assert!(problems[1].contains("`error_message` is written from `e.error_message`"));
}

/// Every column of a free-text shape the migrations create, as (table, column).
fn free_text_columns(dir: &Path) -> BTreeSet<(String, String)> {
    let mut out = BTreeSet::new();
    let mut files: Vec<_> = std::fs::read_dir(dir)
        .expect("a migrations folder")
        .map(|e| e.expect("entry").path())
        .collect();
    files.sort();
    let shaped = |name: &str| {
        ["error", "reason", "message", "detail", "summary"]
            .iter()
            .any(|w| name.contains(w))
    };
    for file in files {
        let sql = std::fs::read_to_string(&file).expect("a migration");
        let mut table = None::<String>;
        for line in sql.lines() {
            let words: Vec<&str> = line.split_whitespace().collect();
            match words.as_slice() {
                ["CREATE", "TABLE", "IF", "NOT", "EXISTS", name, ..]
                | ["CREATE", "TABLE", name, ..] => {
                    table = Some(name.trim_end_matches('(').to_owned());
                }
                [");"] | [")"] => table = None,
                ["ALTER", "TABLE", t, "ADD", "COLUMN", column, kind, ..]
                    if shaped(column) && kind.to_ascii_uppercase().starts_with(['T', 'J']) =>
                {
                    out.insert(((*t).to_owned(), (*column).to_owned()));
                }
                [column, kind, ..] if table.is_some() && shaped(column) => {
                    let kind = kind.to_ascii_uppercase();
                    if kind.starts_with("TEXT") || kind.starts_with("JSON") {
                        out.insert((table.clone().unwrap_or_default(), (*column).to_owned()));
                    }
                }
                _ => {}
            }
        }
    }
    out
}

#[test]
fn every_free_text_column_is_scrubbed_or_exempted_with_its_reason() {
    let known: BTreeSet<(String, String)> = DIAGNOSTIC_COLUMNS
        .iter()
        .map(|c| (c.table.to_owned(), c.column.to_owned()))
        .chain(
            EXEMPT
                .iter()
                .map(|(t, c, _)| ((*t).to_owned(), (*c).to_owned())),
        )
        .collect();
    for backend in ["sqlite", "postgres"] {
        let found = free_text_columns(&workspace().join("crates/store/migrations").join(backend));
        assert!(found.len() >= 10, "{backend}: found only {found:?}");
        let unknown: Vec<_> = found.difference(&known).collect();
        assert!(
            unknown.is_empty(),
            "{backend}: free-text columns neither in scrub::DIAGNOSTIC_COLUMNS nor exempted: {unknown:?}"
        );
        let gone: Vec<_> = DIAGNOSTIC_COLUMNS
            .iter()
            .filter(|c| !found.contains(&(c.table.to_owned(), c.column.to_owned())))
            .map(|c| format!("{}.{}", c.table, c.column))
            .collect();
        assert!(
            gone.is_empty(),
            "{backend}: registered but not in the schema: {gone:?}"
        );
    }
}
