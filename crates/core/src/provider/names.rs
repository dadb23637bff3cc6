//! Which names a Git provider accepts, checked before anything is sent: owners and
//! repositories (GitHub's and GitLab's rules), branch names (Git's ref-name rules, as
//! `git check-ref-format` defines them) and the paths of files in a commit. Each operation's
//! inputs are checked by [`Host`]'s methods, the same ones the providers' operations and the
//! command line call, so a name that would be refused never reaches a URL or a request body.
//!
//! Why refuse rather than only encode: a name is put into an API path, and a name the provider
//! would refuse anyway (`../user`, `main/../../orgs/acme`) is either a mistake or an attempt to
//! reach another endpoint with the token. Encoding ([`super::path`]) keeps each name inside its
//! segment; these rules keep out what no provider would accept in the first place.

use super::{
    CommitFiles, FileMode, NewBranch, NewPullRequest, NewRepository, ProtectionRule, ProviderError,
    RepoRef,
};

/// A name a provider would not accept, and why. (Debug formatting of the value quotes it and
/// escapes control characters.)
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{what} {value:?} {reason}")]
pub struct InvalidName {
    /// What the name is (`branch name`, `repository name`, `file path`…).
    pub what: &'static str,
    /// The name as given.
    pub value: String,
    /// Why it is refused.
    pub reason: &'static str,
}

impl InvalidName {
    fn new(what: &'static str, value: &str, reason: &'static str) -> Self {
        Self {
            what,
            value: value.to_owned(),
            reason,
        }
    }
}

impl From<InvalidName> for ProviderError {
    fn from(e: InvalidName) -> Self {
        ProviderError::validation(&e.to_string())
    }
}

/// What one check answers.
pub type Checked = Result<(), InvalidName>;

/// The longest GitHub login.
pub const GITHUB_LOGIN_MAX: usize = 39;
/// The longest GitHub repository name.
pub const GITHUB_REPO_MAX: usize = 100;
/// The longest GitLab path component (a group's or a project's path).
pub const GITLAB_PATH_MAX: usize = 255;

/// One login part: ASCII letters and digits, single hyphens between them.
fn login_part(part: &str) -> bool {
    !part.is_empty()
        && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
        && !part.starts_with('-')
        && !part.ends_with('-')
        && !part.contains("--")
}

/// A GitHub user or organization login: 1–39 characters, ASCII letters, digits and single
/// hyphens, not starting or ending with a hyphen. One underscore may join two such parts:
/// GitHub documents that managed user accounts (Enterprise Managed Users) are named
/// `handle_shortcode` (and a data-residency setup admin `shortcode_admin`), within 39
/// characters.
pub fn github_login(login: &str) -> Checked {
    let what = "owner";
    if login.is_empty() || login.len() > GITHUB_LOGIN_MAX {
        return Err(InvalidName::new(what, login, "is not 1 to 39 characters"));
    }
    let valid = match login.split_once('_') {
        Some((handle, code)) => login_part(handle) && login_part(code),
        None => login_part(login),
    };
    if valid {
        Ok(())
    } else {
        Err(InvalidName::new(
            what,
            login,
            "is not a GitHub login (letters, digits and single hyphens, not at either end)",
        ))
    }
}

/// A GitHub repository name: 1–100 characters of ASCII letters, digits, `.`, `_` and `-`,
/// and not `.` or `..`.
pub fn github_repo_name(name: &str) -> Checked {
    let what = "repository name";
    if name.is_empty() || name.len() > GITHUB_REPO_MAX {
        return Err(InvalidName::new(what, name, "is not 1 to 100 characters"));
    }
    if name == "." || name == ".." {
        return Err(InvalidName::new(what, name, "is a dot segment"));
    }
    if name
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        Ok(())
    } else {
        Err(InvalidName::new(
            what,
            name,
            "has a character other than letters, digits, `.`, `_` and `-`",
        ))
    }
}

/// One GitLab path (a group's, a subgroup's or a project's): 1–255 characters of ASCII
/// letters, digits, `_`, `-` and `.`, starting with a letter, digit, `_` or `.`, not `.` or
/// `..`, and not ending in `.git` or `.atom` (GitLab's path rules).
pub fn gitlab_path(what: &'static str, path: &str) -> Checked {
    if path.is_empty() || path.len() > GITLAB_PATH_MAX {
        return Err(InvalidName::new(what, path, "is not 1 to 255 characters"));
    }
    if path == "." || path == ".." {
        return Err(InvalidName::new(what, path, "is a dot segment"));
    }
    if path.starts_with('-') {
        return Err(InvalidName::new(what, path, "starts with a hyphen"));
    }
    if path.ends_with(".git") || path.ends_with(".atom") {
        return Err(InvalidName::new(what, path, "ends in .git or .atom"));
    }
    if path
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
    {
        Ok(())
    } else {
        Err(InvalidName::new(
            what,
            path,
            "has a character other than letters, digits, `_`, `-` and `.`",
        ))
    }
}

/// A branch name: `refs/heads/NAME` must be a valid ref name as `git check-ref-format`
/// defines it — no `..`, no ASCII control character, space, `~`, `^`, `:`, `?`, `*`, `[` or
/// `\`, no component starting with `.` or ending with `.lock`, no empty component (no
/// leading or trailing `/`, no `//`), not ending with `.`, no `@{` — and, as `git branch`
/// requires, not starting with `-`. `@` alone is a valid branch (`refs/heads/@` is not `@`).
pub fn branch_name(name: &str) -> Checked {
    let refuse = |reason| Err(InvalidName::new("branch name", name, reason));
    if name.is_empty() {
        return refuse("is empty");
    }
    if name.starts_with('-') {
        return refuse("starts with `-`");
    }
    if name.contains("..") {
        return refuse("contains `..`");
    }
    if name.contains("@{") {
        return refuse("contains `@{`");
    }
    if name.chars().any(|c| {
        c.is_ascii_control() || matches!(c, ' ' | '~' | '^' | ':' | '?' | '*' | '[' | '\\')
    }) {
        return refuse("contains a control character, a space or one of ~ ^ : ? * [ \\");
    }
    if name.ends_with('.') {
        return refuse("ends with `.`");
    }
    for component in name.split('/') {
        if component.is_empty() {
            return refuse("has an empty component (a leading, trailing or double `/`)");
        }
        if component.starts_with('.') {
            return refuse("has a component starting with `.`");
        }
        if component.ends_with(".lock") {
            return refuse("has a component ending with `.lock`");
        }
    }
    Ok(())
}

/// A file's path in a commit, from the repository's root: `/`-separated, not empty, no NUL,
/// no leading `/` and no empty, `.`, `..` or `.git` (in any case, as Git refuses it)
/// component. (It is UTF-8 by being a `str`; the command line refuses other paths.)
pub fn tree_path(path: &str) -> Checked {
    let refuse = |reason| Err(InvalidName::new("file path", path, reason));
    if path.is_empty() {
        return refuse("is empty");
    }
    if path.contains('\0') {
        return refuse("contains a NUL byte");
    }
    if path.starts_with('/') {
        return refuse("starts with `/`");
    }
    for component in path.split('/') {
        match component {
            "" => return refuse("has an empty component (a trailing or double `/`)"),
            "." | ".." => return refuse("has a `.` or `..` component"),
            c if c.eq_ignore_ascii_case(".git") => return refuse("has a `.git` component"),
            _ => {}
        }
    }
    Ok(())
}

/// Whose rules apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Host {
    /// GitHub (github.com, Enterprise Server).
    GitHub,
    /// GitLab (gitlab.com, self-managed).
    GitLab,
}

impl Host {
    /// A repository reference: GitHub's login and repository name, or GitLab's namespace
    /// (each `/`-separated group path) and project path.
    pub fn repo(self, repo: &RepoRef) -> Checked {
        match self {
            Host::GitHub => {
                github_login(&repo.owner)?;
                github_repo_name(&repo.name)
            }
            Host::GitLab => {
                for group in repo.owner.split('/') {
                    gitlab_path("namespace", group)?;
                }
                gitlab_path("project path", &repo.name)
            }
        }
    }

    /// What `create_repo` asks for: the name, and GitHub's organization (GitLab's owner is a
    /// numeric namespace id, which its operation parses).
    pub fn new_repository(self, new: &NewRepository) -> Checked {
        match self {
            Host::GitHub => {
                if let Some(org) = &new.owner {
                    github_login(org)?;
                }
                github_repo_name(&new.name)
            }
            Host::GitLab => gitlab_path("project path", &new.name),
        }
    }

    /// What `create_branch` asks for: both branch names.
    pub fn new_branch(self, new: &NewBranch) -> Checked {
        branch_name(&new.name)?;
        branch_name(&new.from)
    }

    /// What `protect_branch` asks for.
    pub fn protection(self, rule: &ProtectionRule) -> Checked {
        branch_name(&rule.branch)
    }

    /// What `open_pull_request` asks for: head and base are branch names; on GitHub a head
    /// may name a fork's branch as `owner:branch` (its documented cross-repository form).
    pub fn pull_request(self, new: &NewPullRequest) -> Checked {
        match (self, new.head.split_once(':')) {
            (Host::GitHub, Some((owner, branch))) => {
                github_login(owner)?;
                branch_name(branch)?;
            }
            _ => branch_name(&new.head)?,
        }
        branch_name(&new.base)
    }

    /// What `commit_files` asks for: the branch, every file's path, and on GitLab no
    /// symbolic link (its commits API has no way to write one).
    pub fn commit(self, commit: &CommitFiles) -> Checked {
        branch_name(&commit.branch)?;
        for file in &commit.files {
            tree_path(&file.path)?;
            if self == Host::GitLab && file.mode == FileMode::Symlink && file.content.is_some() {
                return Err(InvalidName::new(
                    "file",
                    &file.path,
                    "is a symbolic link, which GitLab's commits API cannot write",
                ));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_github_head_may_name_a_forks_branch_and_nothing_else_may() {
        let pr = |head: &str| NewPullRequest {
            title: "t".into(),
            head: head.into(),
            base: "main".into(),
            body: None,
        };
        assert!(Host::GitHub.pull_request(&pr("alice:feature/x")).is_ok());
        assert!(Host::GitHub.pull_request(&pr("../x:feature")).is_err());
        assert!(Host::GitHub.pull_request(&pr("alice:..")).is_err());
        assert!(Host::GitLab.pull_request(&pr("alice:feature")).is_err());
    }

    #[test]
    fn github_logins_follow_githubs_rules() {
        for ok in [
            "alice",
            "a",
            "acme-corp",
            "a1-b2-c3",
            "octo_acme",
            "2abvd19d_admin",
        ] {
            assert_eq!(github_login(ok), Ok(()), "{ok}");
        }
        let long = "a".repeat(40);
        for bad in [
            "", "../user", "-a", "a-", "a--b", "a.b", "a/b", "a_b_c", "_a", "a_", &long,
        ] {
            assert!(github_login(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn github_repository_names_follow_githubs_rules() {
        for ok in ["widgets", "a.b_c-d", ".github", "x..y", "-x"] {
            assert_eq!(github_repo_name(ok), Ok(()), "{ok}");
        }
        let long = "a".repeat(101);
        for bad in ["", ".", "..", "a/b", "a b", "a%2e", "é", &long] {
            assert!(github_repo_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn branch_names_follow_check_ref_format() {
        for ok in [
            "main",
            "feature/x",
            "a#b",
            "v1.0",
            "ünïcode",
            "a@b",
            "@",
            "x.locked",
        ] {
            assert_eq!(branch_name(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "-x",
            "main/../../../../../orgs/acme/memberships/mallory#",
            "a..b",
            "a@{1}",
            "a b",
            "a~1",
            "a^",
            "a:b",
            "a?",
            "a*",
            "a[",
            "a\\b",
            "a\u{7f}",
            "a\tb",
            "a.",
            "/a",
            "a/",
            "a//b",
            ".a",
            "a/.b",
            "a.lock",
            "a.lock/b",
        ] {
            assert!(branch_name(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn tree_paths_refuse_what_git_refuses() {
        for ok in [
            "a",
            "src/lib.rs",
            ".github/workflows/ci.yml",
            "..a",
            "a.git",
        ] {
            assert_eq!(tree_path(ok), Ok(()), "{ok}");
        }
        for bad in [
            "",
            "/a",
            "a/",
            "a//b",
            ".",
            "..",
            "../x",
            "a/./b",
            ".git/config",
            "a/.GIT",
            "a\0b",
        ] {
            assert!(tree_path(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn gitlab_refuses_a_symlink_and_github_takes_it() {
        let commit = CommitFiles {
            branch: "main".into(),
            message: "m".into(),
            files: vec![super::super::FileChange {
                path: "link".into(),
                content: Some(super::super::FileContent::Text("target".into())),
                mode: FileMode::Symlink,
                exists: false,
            }],
        };
        assert_eq!(Host::GitHub.commit(&commit), Ok(()));
        let refused = Host::GitLab.commit(&commit).expect_err("refused");
        assert!(refused.to_string().contains("\"link\""), "{refused}");
    }

    #[test]
    fn refusals_are_validation_errors_naming_the_value() {
        let e: ProviderError = branch_name("a..b").expect_err("refused").into();
        assert_eq!(e.kind(), "validation");
        assert!(e.to_string().contains("\"a..b\""), "{e}");
    }
}
