//! What a GitHub login, a repository name and an entity's detail URL may look like. Imported
//! and polled data is the provider's word, not ours: a login with a space would add a search
//! qualifier, and an `actor.url` of `/orgs/acme/members` would spend the token on a request
//! nobody asked for. Validation quarantines events whose names are not GitHub-shaped; the
//! detail lane sends only a URL of the shape its entity kind allows.

use headroom_store::feed_state::EntityKind;
use url::Url;

/// The longest login or repository name accepted: GitHub caps logins at 39 characters and
/// repository names at 100; the slack covers managed-user suffixes.
const MAX_NAME: usize = 100;

/// Whether `login` is shaped like a GitHub account login: letters, digits, `-` and `_`, not
/// starting with `-`, optionally ending in `[bot]` (apps' bot accounts). Legacy logins with
/// doubled or trailing hyphens pass; spaces, colons, slashes, quotes and dots never do.
pub fn is_login(login: &str) -> bool {
    let base = login.strip_suffix("[bot]").unwrap_or(login);
    !base.is_empty()
        && login.len() <= MAX_NAME
        && !base.starts_with('-')
        && base
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

/// Whether `name` is shaped like a repository's name (the part after `owner/`): letters,
/// digits, `.`, `-` and `_`, and not `.` or `..`.
pub fn is_repository_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME
        && name != "."
        && name != ".."
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-' || b == b'_')
}

/// Whether `full_name` is `owner/name` with both parts GitHub-shaped.
pub fn is_full_name(full_name: &str) -> bool {
    full_name
        .split_once('/')
        .is_some_and(|(owner, name)| is_login(owner) && is_repository_name(name))
}

/// Why a detail URL is not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DetailRefusal {
    /// Not an absolute URL.
    NotAUrl,
    /// A query, a fragment or credentials in it.
    ExtraParts,
    /// Not under the API's base path, or not one of the entity kind's paths.
    NotEntityShaped,
}

impl DetailRefusal {
    /// The reason stored on the entity.
    pub fn as_str(&self) -> &'static str {
        match self {
            DetailRefusal::NotAUrl => "detail_url_not_a_url",
            DetailRefusal::ExtraParts => "detail_url_has_query_or_credentials",
            DetailRefusal::NotEntityShaped => "detail_url_not_entity_shaped",
        }
    }
}

/// The detail URL of an entity of `kind`, if its path is one that kind allows under the API
/// `base`: `/users/{login}` or `/user/{id}` for an actor, `/repos/{owner}/{name}` or
/// `/repositories/{id}` for a repository, with no query, fragment, credentials or dot
/// segment. The host is the URL policy's to judge when the request is sent.
pub fn detail_url(kind: EntityKind, url: &str, base: &Url) -> Result<Url, DetailRefusal> {
    // Dot segments are refused before parsing: the parser would resolve them away.
    if url
        .split(['/', '?', '#'])
        .any(|s| s == "." || s == ".." || s.eq_ignore_ascii_case("%2e") || s.contains("%2e%2e"))
    {
        return Err(DetailRefusal::NotEntityShaped);
    }
    let parsed = Url::parse(url).map_err(|_| DetailRefusal::NotAUrl)?;
    if parsed.query().is_some()
        || parsed.fragment().is_some()
        || !parsed.username().is_empty()
        || parsed.password().is_some()
    {
        return Err(DetailRefusal::ExtraParts);
    }
    let prefix = base.path().trim_end_matches('/');
    let rest = parsed
        .path()
        .strip_prefix(prefix)
        .ok_or(DetailRefusal::NotEntityShaped)?;
    let segments: Vec<&str> = rest.strip_prefix('/').unwrap_or("").split('/').collect();
    let id = |s: &str| !s.is_empty() && s.len() <= 20 && s.bytes().all(|b| b.is_ascii_digit());
    let shaped = match (kind, segments.as_slice()) {
        (EntityKind::Actor, ["users", login]) => is_login(login),
        (EntityKind::Actor, ["user", n]) => id(n),
        (EntityKind::Repository, ["repos", owner, name]) => {
            is_login(owner) && is_repository_name(name)
        }
        (EntityKind::Repository, ["repositories", n]) => id(n),
        _ => false,
    };
    if shaped {
        Ok(parsed)
    } else {
        Err(DetailRefusal::NotEntityShaped)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn github() -> Url {
        Url::parse("https://api.github.com").expect("valid")
    }

    #[test]
    fn logins_and_names_of_github_pass_and_qualifier_injection_does_not() {
        for ok in [
            "octocat",
            "francods9-tech",
            "github-actions[bot]",
            "a",
            "old--login-",
            "emu_acme",
        ] {
            assert!(is_login(ok), "{ok}");
        }
        for bad in [
            "", "-x", "a b", "a:b", "user:x", "a/b", "a.b", "\"x\"", "[bot]", "x\n",
        ] {
            assert!(!is_login(bad), "{bad:?}");
        }
        assert!(is_full_name("acme/api.v2_x-y"));
        for bad in [
            "acme", "acme/", "/api", "acme/..", "acme/a b", "acme/a/b", "a c/api",
        ] {
            assert!(!is_full_name(bad), "{bad:?}");
        }
    }

    #[test]
    fn detail_urls_have_their_kinds_shape() {
        let base = github();
        let actor = |u: &str| detail_url(EntityKind::Actor, u, &base);
        let repo = |u: &str| detail_url(EntityKind::Repository, u, &base);
        assert!(actor("https://api.github.com/users/octocat").is_ok());
        assert!(actor("https://api.github.com/user/583231").is_ok());
        assert!(repo("https://api.github.com/repos/acme/api").is_ok());
        assert!(repo("https://api.github.com/repositories/1296269").is_ok());
        for bad in [
            "https://api.github.com/rate_limit",
            "https://api.github.com/orgs/acme/members",
            "https://api.github.com/user",
            "https://api.github.com/graphql",
            "https://api.github.com/users/x/../../orgs/acme",
            "https://api.github.com/users/x/%2e%2e/%2e%2e/orgs/acme",
            "https://api.github.com/repos/acme/api",
            "https://api.github.com/users/octocat/repos",
        ] {
            assert_eq!(actor(bad), Err(DetailRefusal::NotEntityShaped), "{bad}");
        }
        assert_eq!(
            actor("https://api.github.com/users/octocat?per_page=100"),
            Err(DetailRefusal::ExtraParts)
        );
        assert_eq!(
            actor("https://t:x@api.github.com/users/octocat"),
            Err(DetailRefusal::ExtraParts)
        );
        assert_eq!(actor("/users/octocat"), Err(DetailRefusal::NotAUrl));
        assert_eq!(
            repo("https://api.github.com/users/octocat"),
            Err(DetailRefusal::NotEntityShaped)
        );
    }

    #[test]
    fn an_enterprise_base_path_is_part_of_the_shape() {
        let base = Url::parse("https://ghe.example.com/api/v3").expect("valid");
        let actor = |u: &str| detail_url(EntityKind::Actor, u, &base);
        assert!(actor("https://ghe.example.com/api/v3/users/octocat").is_ok());
        assert_eq!(
            actor("https://ghe.example.com/users/octocat"),
            Err(DetailRefusal::NotEntityShaped)
        );
    }

    proptest! {
        /// Whatever a URL holds, an accepted one is exactly two or three clean segments under
        /// the base, with no query.
        #[test]
        fn an_accepted_url_is_always_clean(path in "[a-z./%?#:@ -]{0,40}") {
            let url = format!("https://api.github.com/{path}");
            for kind in [EntityKind::Actor, EntityKind::Repository] {
                if let Ok(u) = detail_url(kind, &url, &github()) {
                    prop_assert!(u.query().is_none());
                    let segments: Vec<&str> = u.path().trim_start_matches('/').split('/').collect();
                    prop_assert!(segments.len() == 2 || segments.len() == 3);
                    prop_assert!(segments.iter().all(|s| !s.is_empty() && *s != "." && *s != ".."));
                }
            }
        }
    }
}
