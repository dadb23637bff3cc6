//! Reading the workspace's Rust sources as text, for tests that hold the code to a rule (every
//! log call names a catalog event; every stored diagnostic passes the shared redaction): the
//! files under a folder, a bracket's match skipping literals and comments, and a source
//! without its inline test modules.

use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted, recursively.
pub fn rust_sources(dir: &Path, out: &mut Vec<PathBuf>) {
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
pub fn closing(text: &[u8], open: usize) -> usize {
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
pub fn without_test_modules(source: &str) -> String {
    let mut kept = String::new();
    let mut rest = source;
    while let Some(at) = rest.find("#[cfg(test)]") {
        kept.push_str(&rest[..at]);
        let after = &rest[at + "#[cfg(test)]".len()..];
        let declared_elsewhere = after
            .find(['{', ';'])
            .is_some_and(|i| after.as_bytes()[i] == b';');
        if after.trim_start().starts_with("mod ") && declared_elsewhere {
            // `#[cfg(test)] mod tests;`: its body is a file of its own.
            rest = &after[after.find(';').map_or(after.len(), |i| i + 1)..];
        } else if after.trim_start().starts_with("mod ") {
            let open = after.find('{').expect("a test module's body");
            rest = &after[closing(after.as_bytes(), open)..];
        } else {
            rest = after;
        }
    }
    kept.push_str(rest);
    kept
}

/// The top-level comma-separated parts of a macro call's arguments (or any list), trimmed.
pub fn arguments(body: &str) -> Vec<String> {
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

/// Every non-test source file of every crate's `src/` under `crates`, as (path shown relative
/// to `root`, text without inline test modules).
pub fn crate_sources(root: &Path) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    let mut crates: Vec<_> = std::fs::read_dir(root.join("crates"))
        .unwrap_or_else(|e| panic!("{}: {e}", root.display()))
        .map(|e| e.expect("directory entry").path())
        .collect();
    crates.sort();
    for krate in crates {
        let src = krate.join("src");
        if src.is_dir() {
            rust_sources(&src, &mut files);
        }
    }
    files
        .into_iter()
        .map(|file| {
            let text = std::fs::read_to_string(&file)
                .unwrap_or_else(|e| panic!("{}: {e}", file.display()));
            let shown = file.strip_prefix(root).unwrap_or(&file).to_path_buf();
            (shown, without_test_modules(&text))
        })
        .collect()
}
