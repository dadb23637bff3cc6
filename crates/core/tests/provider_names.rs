//! Property tests of the provider name rules and the path-segment encoder: what is accepted
//! never holds what the rules forbid, encoding is reversible and keeps every name inside its
//! segment, and branch names agree with `git check-ref-format` itself.

use headroom_core::provider::names::{branch_name, github_login, github_repo_name, tree_path};
use headroom_core::provider::path::{segment, segments};
use proptest::prelude::*;

/// Undoes `%XX` escapes (the test's own decoder, independent of the encoder).
fn decode(text: &str) -> Vec<u8> {
    let bytes = text.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).expect("ascii");
            out.push(u8::from_str_radix(hex, 16).expect("hex"));
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Characters that make up hostile names: delimiters, dots, escapes, controls, non-ASCII.
fn hostile_char() -> impl Strategy<Value = char> {
    prop_oneof![
        4 => prop::sample::select(vec!['a', 'b', 'Z', '0', '9']),
        3 => prop::sample::select(vec!['.', '/', '-', '_']),
        2 => prop::sample::select(vec![
            '%', '#', '?', '&', '=', '+', ' ', '~', '^', ':', '*', '[', '\\', '@', '{', '\t',
            '\u{7f}', '\0', 'é', '\u{202e}',
        ]),
    ]
}

fn hostile(max: usize) -> impl Strategy<Value = String> {
    prop::collection::vec(hostile_char(), 0..max).prop_map(|c| c.into_iter().collect())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn a_segment_decodes_to_its_text_and_holds_no_delimiter(text in hostile(24)) {
        match segment(&text) {
            Ok(encoded) => {
                prop_assert!(encoded.bytes().all(|b| b.is_ascii_alphanumeric()
                    || matches!(b, b'-' | b'.' | b'_' | b'~' | b'%')), "{encoded}");
                prop_assert_eq!(decode(&encoded), text.as_bytes().to_vec());
                prop_assert!(encoded != "." && encoded != "..");
                // No dot segment in any spelling a URL parser knows.
                let lower = encoded.to_ascii_lowercase();
                prop_assert!(lower != "%2e" && lower != "%2e%2e" && lower != ".%2e"
                    && lower != "%2e.");
            }
            Err(_) => prop_assert!(text.is_empty() || text == "." || text == ".."),
        }
    }

    #[test]
    fn an_accepted_branch_name_holds_nothing_check_ref_format_forbids(name in hostile(24)) {
        if branch_name(&name).is_ok() {
            prop_assert!(!name.is_empty() && !name.starts_with('-'));
            let at_brace = name.contains("@{");
            prop_assert!(!name.contains("..") && !at_brace && !name.ends_with('.'));
            prop_assert!(!name.chars().any(|c| c.is_ascii_control()
                || " ~^:?*[\\".contains(c)));
            for component in name.split('/') {
                prop_assert!(!component.is_empty() && !component.starts_with('.')
                    && !component.ends_with(".lock"));
            }
            // …so its components encode without a dot or empty segment, and decode back.
            let encoded = segments(&name).expect("an accepted name encodes");
            let back: Vec<Vec<u8>> = encoded.split('/').map(decode).collect();
            prop_assert_eq!(back.join(&b'/'), name.as_bytes().to_vec());
        }
    }

    #[test]
    fn a_name_with_a_parent_component_is_always_refused(
        before in "[a-z]{0,6}", after in "[a-z]{0,6}", slashes in 0usize..3,
    ) {
        let name = format!("{before}{}..{}{after}", "/".repeat(slashes), "/".repeat(slashes));
        prop_assert!(branch_name(&name).is_err());
        let path = format!("{before}/../{after}");
        prop_assert!(tree_path(&path).is_err());
        let owner = format!("../{after}");
        prop_assert!(github_login(&owner).is_err());
    }

    #[test]
    fn an_accepted_tree_path_has_only_real_components(path in hostile(24)) {
        if tree_path(&path).is_ok() {
            prop_assert!(!path.starts_with('/') && !path.contains('\0'));
            for component in path.split('/') {
                prop_assert!(!matches!(component, "" | "." | ".."));
                prop_assert!(!component.eq_ignore_ascii_case(".git"));
            }
        }
    }

    #[test]
    fn github_logins_and_repository_names_keep_to_their_alphabets(name in hostile(42)) {
        if github_login(&name).is_ok() {
            prop_assert!((1..=39).contains(&name.len()));
            prop_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_'));
            prop_assert!(!name.starts_with('-') && !name.ends_with('-') && !name.contains("--"));
            prop_assert!(name.matches('_').count() <= 1);
        }
        if github_repo_name(&name).is_ok() {
            prop_assert!((1..=100).contains(&name.len()) && name != "." && name != "..");
            prop_assert!(name.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b)));
        }
    }

    #[test]
    fn valid_logins_are_accepted(
        parts in prop::collection::vec("[a-zA-Z0-9]{1,6}", 1..5),
    ) {
        let login = parts.join("-");
        prop_assume!(login.len() <= 39);
        prop_assert_eq!(github_login(&login), Ok(()));
    }
}

/// `git check-ref-format refs/heads/NAME` on this machine, or `None` without git.
fn git_accepts(name: &str) -> Option<bool> {
    let status = std::process::Command::new("git")
        .args(["check-ref-format", &format!("refs/heads/{name}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .ok()?;
    Some(status.success())
}

/// Every name of up to two characters from the hostile alphabet, against git: the random
/// test below found `@` only by chance, so the short corner cases are checked every run.
#[test]
fn short_branch_names_agree_with_git_check_ref_format() {
    let alphabet: Vec<char> = "a.-/@{}~^:?*[\\ \t%#é".chars().collect();
    let mut names: Vec<String> = alphabet.iter().map(|c| c.to_string()).collect();
    for a in &alphabet {
        for b in &alphabet {
            names.push([*a, *b].iter().collect());
        }
    }
    for name in names.iter().filter(|n| !n.starts_with('-')) {
        let git = git_accepts(name).expect("git is needed for this oracle test");
        assert_eq!(branch_name(name).is_ok(), git, "{name:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Git itself is the oracle: `branch_name` accepts exactly what `git check-ref-format`
    /// accepts, less names starting with `-` (which `git branch` refuses too). NUL cannot be
    /// passed to a process, so the oracle's names leave it out.
    #[test]
    fn branch_names_agree_with_git_check_ref_format(name in hostile(12)) {
        prop_assume!(!name.contains('\0') && !name.starts_with('-'));
        let Some(git) = git_accepts(&name) else {
            // The repository is a git checkout; CI has git. Say so rather than pass quietly.
            panic!("git is needed for this oracle test");
        };
        prop_assert_eq!(branch_name(&name).is_ok(), git, "{:?}", name);
    }
}
