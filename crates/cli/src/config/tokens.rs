//! Which token a process uses, and which others it was given besides.
//!
//! A token comes from `--token-file` (or `token_file` in `headroom.toml`), else `GITHUB_TOKEN`,
//! else `GH_TOKEN`: the first present is used. The others present with a different token are
//! kept as well, never to be spent, only so that a sync can refuse to start when they belong
//! to another owner than the one used: credentials are not capacity, and two tokens set for
//! one run must not leave it to precedence whose quota is spent.

use std::path::Path;

use headroom_http::Credential;

use super::read::{TOKEN_MAX_BYTES, read_bounded};
use super::{ConfigError, Environment, invalid};

/// A token configured beside the one used (a different token, by fingerprint).
#[derive(Debug, Clone)]
pub struct ConfiguredToken {
    /// Where it comes from, as the user spells it (`GH_TOKEN`).
    pub source: &'static str,
    /// The token.
    pub credential: Credential,
}

/// The token used and where it comes from, if any.
pub(super) type Used = Option<(&'static str, Credential)>;

/// Reads every configured token: the one used (the first by precedence) and the others that
/// differ from it.
pub(super) fn tokens(
    file: Option<&Path>,
    env: &dyn Environment,
) -> Result<(Used, Vec<ConfiguredToken>), ConfigError> {
    let mut found: Vec<(&'static str, Credential)> = Vec::new();
    if let Some(path) = file {
        let bytes = read_bounded("--token-file", path, TOKEN_MAX_BYTES)?;
        let token = String::from_utf8(bytes)
            .map_err(|_| invalid("--token-file", "the file is not UTF-8 text"))?;
        let token = token.trim();
        if token.is_empty() || token.contains(char::is_whitespace) {
            return Err(invalid(
                "--token-file",
                "the file must hold exactly one token",
            ));
        }
        found.push(("--token-file", Credential::new(token)));
    }
    for name in ["GITHUB_TOKEN", "GH_TOKEN"] {
        if let Some(token) = env.var(name) {
            found.push((name, Credential::new(&token)));
        }
    }
    let mut found = found.into_iter();
    let used = found.next();
    let mut others: Vec<ConfiguredToken> = Vec::new();
    for (source, credential) in found {
        let same = |c: &Credential| c.fingerprint() == credential.fingerprint();
        if used.as_ref().is_some_and(|(_, u)| same(u)) || others.iter().any(|o| same(&o.credential))
        {
            continue;
        }
        others.push(ConfiguredToken { source, credential });
    }
    Ok((used, others))
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    use crate::config::tests::Env;

    fn sources(others: &[ConfiguredToken]) -> Vec<&'static str> {
        others.iter().map(|o| o.source).collect()
    }

    #[test]
    fn the_first_token_is_used_and_every_different_one_is_kept_beside_it() {
        let env = Env(HashMap::from([
            ("GITHUB_TOKEN", "ghp_a"),
            ("GH_TOKEN", "ghp_b"),
        ]));
        let (used, others) = tokens(None, &env).expect("valid");
        let (source, credential) = used.expect("a token");
        assert_eq!(source, "GITHUB_TOKEN");
        assert_eq!(
            credential.fingerprint(),
            Credential::new("ghp_a").fingerprint()
        );
        assert_eq!(sources(&others), ["GH_TOKEN"]);
        assert_eq!(
            others[0].credential.fingerprint(),
            Credential::new("ghp_b").fingerprint()
        );

        // The same token twice is one token.
        let env = Env(HashMap::from([
            ("GITHUB_TOKEN", "ghp_a"),
            ("GH_TOKEN", "ghp_a"),
        ]));
        let (_, others) = tokens(None, &env).expect("valid");
        assert!(others.is_empty());

        // A token file comes first; both variables are kept beside it, once each.
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("token");
        std::fs::write(&path, "ghp_file\n").expect("write");
        let env = Env(HashMap::from([
            ("GITHUB_TOKEN", "ghp_a"),
            ("GH_TOKEN", "ghp_b"),
        ]));
        let (used, others) = tokens(Some(&path), &env).expect("valid");
        assert_eq!(used.expect("a token").0, "--token-file");
        assert_eq!(sources(&others), ["GITHUB_TOKEN", "GH_TOKEN"]);

        let (used, others) = tokens(None, &Env(HashMap::new())).expect("valid");
        assert!(used.is_none() && others.is_empty());
    }
}
