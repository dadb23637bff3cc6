//! Every provider's access beside GitHub's: the API base and the credential, each in its
//! ecosystem's convention (PROVIDER-FACTS.md, Authentication).
//!
//! A provider reads only its own variables (`GITLAB_TOKEN`, `JIRA_API_TOKEN`, …) and its own
//! section of the config file (`[gitlab]`, `[jira]`, `[linear]`, `[launchdarkly]`): GitHub's
//! `GITHUB_API_URL`, `GITHUB_TOKEN` and `GH_TOKEN` never apply to another provider. A personal
//! token goes the provider's way (GitLab's `PRIVATE-TOKEN`, the raw key on Linear and
//! LaunchDarkly, Basic with the e-mail on Jira); an OAuth token comes from its own variable and
//! goes as Bearer. Every process resolves all of them at once, so a setting that cannot be used
//! refuses to start whatever the command.

use std::path::{Path, PathBuf};

use headroom_http::{AuthScheme, Credential, UrlPolicy};
use serde::Deserialize;
use toml::Spanned;

use super::file::ConfigFile;
use super::read::{TOKEN_MAX_BYTES, read_bounded};
use super::sources::{Source, Sources};
use super::tokens::ConfiguredToken;
use super::{ConfigError, Environment, invalid};

/// `[gitlab]`, `[linear]`, `[launchdarkly]`: where the API is and the file holding the token.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct ApiSection {
    pub(super) api_url: Option<Spanned<String>>,
    pub(super) token_file: Option<Spanned<PathBuf>>,
}

/// `[jira]`: the site (`https://NAME.atlassian.net`), the account's e-mail and the token file.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct JiraSection {
    pub(super) site: Option<Spanned<String>>,
    pub(super) email: Option<Spanned<String>>,
    pub(super) token_file: Option<Spanned<PathBuf>>,
    /// The OAuth app whose access token `JIRA_OAUTH_TOKEN` is: its points are the app's.
    pub(super) oauth_client_id: Option<Spanned<String>>,
    /// Requests a second each endpoint is paced to (the site's burst rate; Jira's default 100).
    pub(super) burst_per_sec: Option<Spanned<u32>>,
}

/// One provider's access: where its API is, and the credential that will be sent there.
#[derive(Debug, Clone)]
pub struct ProviderAccess {
    /// The API base; `None` for Jira until a site is named.
    pub policy: Option<UrlPolicy>,
    /// The credential, if one is configured.
    pub credential: Option<Credential>,
    /// Where it comes from, in words (`environment variable GITLAB_TOKEN`).
    pub credential_source: Option<String>,
    /// Every token configured for the provider, by precedence, the one used first: a run
    /// refuses to start when two of them belong to different owners.
    pub configured: Vec<ConfiguredToken>,
}

/// GitLab's, Jira's, Linear's and LaunchDarkly's access, resolved together.
#[derive(Debug, Clone)]
pub struct Providers {
    /// GitLab (gitlab.com unless another base is named).
    pub gitlab: ProviderAccess,
    /// Jira Cloud (a site must be named).
    pub jira: ProviderAccess,
    /// Requests a second each Jira endpoint is paced to: the site's burst rate per endpoint and
    /// method (`burst_per_sec` in `[jira]`; Jira documents 100 for GET and POST).
    pub jira_burst_per_sec: u32,
    /// Linear.
    pub linear: ProviderAccess,
    /// LaunchDarkly.
    pub launchdarkly: ProviderAccess,
}

/// What differs between the providers that take an API URL.
struct Convention {
    /// The settings' names, as `headroom config show` lists them.
    keys: Keys,
    default_base: &'static str,
    /// Token variables by precedence, with how each is presented.
    tokens: &'static [(&'static str, TokenKind)],
}

#[derive(Clone, Copy)]
struct Keys {
    api_url: &'static str,
    token_file: &'static str,
    token: &'static str,
}

#[derive(Clone, Copy)]
enum TokenKind {
    Personal,
    OAuth,
}

const GITLAB: Convention = Convention {
    keys: Keys {
        api_url: "gitlab.api_url",
        token_file: "gitlab.token_file",
        token: "gitlab.token",
    },
    default_base: "https://gitlab.com/api/v4",
    tokens: &[
        ("GITLAB_TOKEN", TokenKind::Personal),
        ("GITLAB_OAUTH_TOKEN", TokenKind::OAuth),
    ],
};

const LINEAR: Convention = Convention {
    keys: Keys {
        api_url: "linear.api_url",
        token_file: "linear.token_file",
        token: "linear.token",
    },
    default_base: "https://api.linear.app",
    tokens: &[
        ("LINEAR_API_KEY", TokenKind::Personal),
        ("LINEAR_OAUTH_TOKEN", TokenKind::OAuth),
    ],
};

const LAUNCHDARKLY: Convention = Convention {
    keys: Keys {
        api_url: "launchdarkly.api_url",
        token_file: "launchdarkly.token_file",
        token: "launchdarkly.token",
    },
    default_base: "https://app.launchdarkly.com",
    tokens: &[
        ("LD_ACCESS_TOKEN", TokenKind::Personal),
        ("LD_OAUTH_TOKEN", TokenKind::OAuth),
    ],
};

/// Resolves every provider's access from the config file's sections and the environment,
/// recording where each value came from (tokens by fingerprint only).
pub(super) fn resolve(
    file: &ConfigFile,
    env: &dyn Environment,
    sources: &mut Sources,
) -> Result<Providers, ConfigError> {
    let settings = &file.settings;
    Ok(Providers {
        gitlab: api_provider(&GITLAB, settings.gitlab.as_ref(), file, env, sources)?,
        jira: jira(settings.jira.as_ref(), file, env, sources)?,
        jira_burst_per_sec: jira_burst(settings.jira.as_ref(), file, sources)?,
        linear: api_provider(&LINEAR, settings.linear.as_ref(), file, env, sources)?,
        launchdarkly: api_provider(
            &LAUNCHDARKLY,
            settings.launchdarkly.as_ref(),
            file,
            env,
            sources,
        )?,
    })
}

fn api_provider(
    convention: &Convention,
    section: Option<&ApiSection>,
    file: &ConfigFile,
    env: &dyn Environment,
    sources: &mut Sources,
) -> Result<ProviderAccess, ConfigError> {
    let keys = convention.keys;
    let (base, source) = match section.and_then(|s| s.api_url.as_ref()) {
        Some(url) => (url.get_ref().clone(), file.source(&url.span())),
        None => (convention.default_base.to_owned(), Source::Default),
    };
    let policy = UrlPolicy::for_api_url(&base).map_err(|e| invalid(keys.api_url, e.to_string()))?;
    sources.push(keys.api_url, policy.base().to_string(), source);
    // Every token configured, by precedence: the first is used, the others are kept only so
    // that a run refuses to start when they belong to another owner.
    let mut found: Vec<(Credential, Source, &'static str)> = Vec::new();
    if let Some(path) = section.and_then(|s| s.token_file.as_ref()) {
        let token = token_from_file(keys.token_file, path.get_ref())?;
        found.push((
            Credential::new(&token),
            file.source(&path.span()),
            keys.token_file,
        ));
    }
    found.extend(from_env(convention.tokens, env)?);
    let configured = found
        .iter()
        .map(|(credential, _, name)| ConfiguredToken {
            source: name,
            credential: credential.clone(),
        })
        .collect();
    let used = found
        .into_iter()
        .next()
        .map(|(credential, source, _)| (credential, source));
    let mut access = record(keys.token, Some(policy), used, sources);
    access.configured = configured;
    Ok(access)
}

fn jira(
    section: Option<&JiraSection>,
    file: &ConfigFile,
    env: &dyn Environment,
    sources: &mut Sources,
) -> Result<ProviderAccess, ConfigError> {
    let policy = match section.and_then(|s| s.site.as_ref()) {
        Some(site) => {
            let policy = UrlPolicy::for_api_url(site.get_ref())
                .map_err(|e| invalid("jira.site", e.to_string()))?;
            sources.push(
                "jira.site",
                policy.base().to_string(),
                file.source(&site.span()),
            );
            Some(policy)
        }
        None => {
            sources.push("jira.site", "none (named by the command)", Source::Default);
            None
        }
    };
    let email = match section.and_then(|s| s.email.as_ref()) {
        Some(email) => Some((email.get_ref().trim().to_owned(), "jira.email")),
        None => env
            .var("JIRA_EMAIL")
            .filter(|e| !e.trim().is_empty())
            .map(|e| (e.trim().to_owned(), "JIRA_EMAIL")),
    };
    let basic = |token: &str, setting: &str| match &email {
        Some((user, _)) => Ok(Credential::with_scheme(
            token,
            AuthScheme::Basic {
                user: user.as_str().into(),
            },
        )),
        None => Err(invalid(
            setting,
            "a Jira API token goes with the account's e-mail: set JIRA_EMAIL (or `email` in [jira])",
        )),
    };
    let found = match section.and_then(|s| s.token_file.as_ref()) {
        Some(path) => {
            let token = token_from_file("jira.token_file", path.get_ref())?;
            let credential = basic(&token, "jira.token_file")?;
            Some((credential, file.source(&path.span())))
        }
        None => match (
            token_var(env, "JIRA_API_TOKEN")?,
            token_var(env, "JIRA_OAUTH_TOKEN")?,
        ) {
            (Some(token), _) => Some((
                basic(&token, "JIRA_API_TOKEN")?,
                Source::Env {
                    name: "JIRA_API_TOKEN",
                },
            )),
            (None, Some(token)) => Some((
                Credential::with_scheme(&token, jira_app(section, env)?),
                Source::Env {
                    name: "JIRA_OAUTH_TOKEN",
                },
            )),
            (None, None) => None,
        },
    };
    Ok(record("jira.token", policy, found, sources))
}

/// `burst_per_sec` in `[jira]`, 1 to 10,000; Jira's documented 100 by default.
fn jira_burst(
    section: Option<&JiraSection>,
    file: &ConfigFile,
    sources: &mut Sources,
) -> Result<u32, ConfigError> {
    let default = headroom_core::governor::JIRA_BURST_PER_SEC;
    let Some(rate) = section.and_then(|s| s.burst_per_sec.as_ref()) else {
        sources.push("jira.burst_per_sec", default.to_string(), Source::Default);
        return Ok(default);
    };
    let value = *rate.get_ref();
    if !(1..=10_000).contains(&value) {
        return Err(invalid(
            "jira.burst_per_sec",
            "must be 1 to 10000 requests a second",
        ));
    }
    sources.push(
        "jira.burst_per_sec",
        value.to_string(),
        file.source(&rate.span()),
    );
    Ok(value)
}

/// How a Jira OAuth token is presented: Bearer, naming the app whose points it spends
/// (`oauth_client_id` in `[jira]`, else `JIRA_OAUTH_CLIENT_ID`); refused without one, since
/// the token cannot tell its app and the governor would not know whose quota it is.
fn jira_app(
    section: Option<&JiraSection>,
    env: &dyn Environment,
) -> Result<AuthScheme, ConfigError> {
    let named = section
        .and_then(|s| s.oauth_client_id.as_ref())
        .map(|id| id.get_ref().trim().to_owned())
        .or_else(|| {
            env.var("JIRA_OAUTH_CLIENT_ID")
                .map(|id| id.trim().to_owned())
        })
        .filter(|id| !id.is_empty());
    match named {
        Some(client_id) if !client_id.contains(char::is_whitespace) => Ok(AuthScheme::AppBearer {
            client_id: client_id.as_str().into(),
        }),
        Some(_) => Err(invalid(
            "JIRA_OAUTH_CLIENT_ID",
            "must hold exactly one client id",
        )),
        None => Err(invalid(
            "JIRA_OAUTH_TOKEN",
            "a Jira OAuth token spends its app's points: name the app with JIRA_OAUTH_CLIENT_ID \
             (or `oauth_client_id` in [jira])",
        )),
    }
}

/// Every token variable set, by precedence, presented its way.
fn from_env(
    tokens: &[(&'static str, TokenKind)],
    env: &dyn Environment,
) -> Result<Vec<(Credential, Source, &'static str)>, ConfigError> {
    let mut found = Vec::new();
    for (name, kind) in tokens {
        if let Some(token) = token_var(env, name)? {
            let credential = match kind {
                TokenKind::Personal => Credential::new(&token),
                TokenKind::OAuth => Credential::with_scheme(&token, AuthScheme::Bearer),
            };
            found.push((credential, Source::Env { name }, *name));
        }
    }
    Ok(found)
}

/// A token variable's value: `None` when unset or blank; refused when it holds several words.
fn token_var(env: &dyn Environment, name: &str) -> Result<Option<String>, ConfigError> {
    match env.var(name) {
        Some(token) if token.trim().is_empty() => Ok(None),
        Some(token) if token.trim().contains(char::is_whitespace) => {
            Err(invalid(name, "must hold exactly one token"))
        }
        Some(token) => Ok(Some(token.trim().to_owned())),
        None => Ok(None),
    }
}

fn token_from_file(setting: &str, path: &Path) -> Result<String, ConfigError> {
    let bytes = read_bounded(setting, path, TOKEN_MAX_BYTES)?;
    let text =
        String::from_utf8(bytes).map_err(|_| invalid(setting, "the file is not UTF-8 text"))?;
    let token = text.trim();
    if token.is_empty() || token.contains(char::is_whitespace) {
        return Err(invalid(setting, "the file must hold exactly one token"));
    }
    Ok(token.to_owned())
}

fn record(
    token_key: &'static str,
    policy: Option<UrlPolicy>,
    found: Option<(Credential, Source)>,
    sources: &mut Sources,
) -> ProviderAccess {
    match &found {
        Some((credential, source)) => sources.push(
            token_key,
            format!("fingerprint {}", credential.fingerprint()),
            source.clone(),
        ),
        None => sources.push(token_key, "none", Source::Default),
    }
    let (credential, source) = found.unzip();
    ProviderAccess {
        configured: credential
            .iter()
            .map(|c| ConfiguredToken {
                source: token_key,
                credential: c.clone(),
            })
            .collect(),
        policy,
        credential,
        credential_source: source.map(|s| s.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use headroom_http::AuthScheme;

    use super::{ConfigFile, Source};
    use crate::config::GlobalArgs;
    use crate::config::tests::Env;

    fn resolve(vars: &[(&'static str, &'static str)]) -> Result<super::Providers, String> {
        GlobalArgs::default()
            .resolve(&Env(vars.iter().copied().collect::<HashMap<_, _>>()))
            .map(|s| s.providers)
            .map_err(|e| e.to_string())
    }

    fn scheme(access: &super::ProviderAccess) -> Option<AuthScheme> {
        access.credential.as_ref().map(|c| c.scheme().clone())
    }

    #[test]
    fn githubs_variables_never_apply_to_another_provider() {
        let p = resolve(&[
            ("GITHUB_TOKEN", "ghp_x"),
            ("GH_TOKEN", "ghp_y"),
            ("GITHUB_API_URL", "https://ghe.example.com/api/v3"),
        ])
        .expect("valid");
        for access in [&p.gitlab, &p.jira, &p.linear, &p.launchdarkly] {
            assert!(access.credential.is_none());
        }
        let base = |a: &super::ProviderAccess| a.policy.as_ref().map(|p| p.base().to_string());
        assert_eq!(
            base(&p.gitlab).as_deref(),
            Some("https://gitlab.com/api/v4/")
        );
        assert_eq!(base(&p.linear).as_deref(), Some("https://api.linear.app/"));
        assert_eq!(
            base(&p.launchdarkly).as_deref(),
            Some("https://app.launchdarkly.com/")
        );
        assert_eq!(base(&p.jira), None);
    }

    #[test]
    fn each_token_goes_its_providers_way_and_oauth_as_bearer() {
        let p = resolve(&[
            ("GITLAB_OAUTH_TOKEN", "oauth-gl"),
            ("LINEAR_API_KEY", "lin_api_k"),
            ("LD_ACCESS_TOKEN", "api-k"),
            ("JIRA_EMAIL", "me@example.com"),
            ("JIRA_API_TOKEN", "ATATT3x"),
        ])
        .expect("valid");
        assert_eq!(scheme(&p.gitlab), Some(AuthScheme::Bearer));
        assert_eq!(
            p.gitlab.credential_source.as_deref(),
            Some("environment variable GITLAB_OAUTH_TOKEN")
        );
        assert_eq!(scheme(&p.linear), Some(AuthScheme::ProviderDefault));
        assert_eq!(scheme(&p.launchdarkly), Some(AuthScheme::ProviderDefault));
        assert_eq!(
            scheme(&p.jira),
            Some(AuthScheme::Basic {
                user: "me@example.com".into()
            })
        );
        // The personal token wins over the OAuth one, as GITHUB_TOKEN wins over GH_TOKEN.
        let p = resolve(&[("GITLAB_TOKEN", "glpat-a"), ("GITLAB_OAUTH_TOKEN", "oauth")])
            .expect("valid");
        assert_eq!(scheme(&p.gitlab), Some(AuthScheme::ProviderDefault));
    }

    #[test]
    fn a_setting_that_cannot_be_used_refuses_to_start_naming_it() {
        let err = resolve(&[("JIRA_API_TOKEN", "ATATT3x")]).expect_err("no e-mail");
        assert!(
            err.contains("JIRA_API_TOKEN") && err.contains("JIRA_EMAIL"),
            "{err}"
        );
        let err = resolve(&[("LINEAR_API_KEY", "two words")]).expect_err("two words");
        assert!(err.contains("LINEAR_API_KEY"), "{err}");
        // Blank is unset, as an empty GITHUB_TOKEN is.
        assert!(resolve(&[("LD_ACCESS_TOKEN", "  ")]).is_ok());
        // A Jira OAuth token spends its app's points: without the app, refused by name.
        let err = resolve(&[("JIRA_OAUTH_TOKEN", "oauth-j")]).expect_err("no app");
        assert!(err.contains("JIRA_OAUTH_CLIENT_ID"), "{err}");
        let p = resolve(&[
            ("JIRA_OAUTH_TOKEN", "oauth-j"),
            ("JIRA_OAUTH_CLIENT_ID", "client-9"),
        ])
        .expect("valid");
        assert_eq!(
            scheme(&p.jira),
            Some(AuthScheme::AppBearer {
                client_id: "client-9".into()
            })
        );
    }

    /// Every GitLab token configured is kept, by precedence, so that a run can refuse two
    /// owners; the one used is the first.
    #[test]
    fn every_configured_token_of_a_provider_is_kept_the_used_one_first() {
        let p = resolve(&[
            ("GITLAB_TOKEN", "glpat-a"),
            ("GITLAB_OAUTH_TOKEN", "oauth-b"),
        ])
        .expect("valid");
        let names: Vec<(&str, String)> = p
            .gitlab
            .configured
            .iter()
            .map(|t| (t.source, t.credential.fingerprint().to_owned()))
            .collect();
        assert_eq!(
            names,
            [
                (
                    "GITLAB_TOKEN",
                    headroom_http::credential::fingerprint("glpat-a")
                ),
                (
                    "GITLAB_OAUTH_TOKEN",
                    headroom_http::credential::fingerprint("oauth-b")
                ),
            ]
        );
        assert_eq!(
            p.gitlab
                .credential
                .as_ref()
                .map(|c| c.fingerprint().to_owned()),
            Some(headroom_http::credential::fingerprint("glpat-a"))
        );
    }

    #[test]
    fn a_providers_section_is_read_from_a_named_file_only() {
        let dir = tempfile::tempdir().expect("tempdir");
        let token = dir.path().join("gitlab-token");
        std::fs::write(&token, "glpat-fromfile\n").expect("write");
        let config = dir.path().join("headroom.toml");
        std::fs::write(
            &config,
            format!(
                "[gitlab]\napi_url = \"https://gitlab.example.com/api/v4\"\ntoken_file = {:?}\n\
                 [jira]\nsite = \"https://acme.atlassian.net\"\nemail = \"me@example.com\"\n",
                token.display().to_string()
            ),
        )
        .expect("write");
        let named = GlobalArgs {
            config: Some(config.clone()),
            ..GlobalArgs::default()
        };
        let s = named
            .resolve(&Env(HashMap::from([("GITLAB_TOKEN", "glpat-env")])))
            .expect("valid");
        let gitlab = &s.providers.gitlab;
        assert_eq!(
            gitlab.policy.as_ref().map(|p| p.host().to_owned()),
            Some("gitlab.example.com".to_owned())
        );
        assert_eq!(
            gitlab
                .credential
                .as_ref()
                .map(|c| c.fingerprint().to_owned()),
            Some(headroom_http::credential::fingerprint("glpat-fromfile"))
        );
        assert!(
            s.sources
                .settings
                .iter()
                .any(|x| x.setting == "gitlab.token" && !x.value.contains("glpat")),
        );
        assert_eq!(
            s.providers
                .jira
                .policy
                .as_ref()
                .map(|p| p.host().to_owned()),
            Some("acme.atlassian.net".to_owned())
        );
        // The same file found implicitly in the working directory decides no host.
        let implicit = ConfigFile::load(Some((&config, Source::Default)));
        let err = implicit.expect_err("refused");
        assert!(err.to_string().contains("gitlab.api_url"), "{err}");
    }
}
