//! Each provider's settings for a sync command: its API and credential from the flags, the
//! config file and the environment, no other provider's tokens, and the other tokens
//! configured beside the one used (a run refuses to start when they spend another quota).

use super::SyncKind;
use crate::config::{GlobalArgs, Settings};
use crate::outcome::CliError;

/// The access configured for `kind`'s provider; `None` for GitHub's, which is the settings'
/// own.
pub(super) fn access(
    settings: &Settings,
    kind: SyncKind,
) -> Option<&crate::config::ProviderAccess> {
    let p = &settings.providers;
    match kind {
        SyncKind::Org => None,
        SyncKind::Gitlab => Some(&p.gitlab),
        SyncKind::Jira => Some(&p.jira),
        SyncKind::Linear => Some(&p.linear),
        SyncKind::LaunchDarkly => Some(&p.launchdarkly),
    }
}

/// The settings of `kind`'s runs from what is configured, when its provider has a credential
/// and an API (a Jira site) configured: a worker then takes its runs up too. GitHub's are the
/// settings themselves.
pub(crate) fn configured_for(settings: &Settings, kind: SyncKind) -> Option<Settings> {
    let Some(access) = access(settings, kind) else {
        return Some(settings.clone());
    };
    let credential = access.credential.clone()?;
    let mut out = settings.clone();
    out.policy = access.policy.clone()?;
    out.also_configured = besides(&credential, &access.configured);
    out.credential_source = source_of(&credential, &access.configured);
    out.credential = Some(credential);
    Some(out)
}

/// The settings of a Jira or Linear command run with the global flags (`--api-url` names
/// Jira's site or Linear's API), and where its credential came from in words.
pub(crate) fn provider_settings(
    global: &GlobalArgs,
    settings: Settings,
    kind: SyncKind,
) -> Result<(Settings, Option<String>), CliError> {
    let settings = match kind {
        SyncKind::Jira => {
            let site = global
                .api_url
                .clone()
                .filter(|_| !global.env_sourced.api_url);
            jira_settings(global, settings, site.as_deref())?
        }
        SyncKind::LaunchDarkly => launchdarkly_settings(global, settings)?,
        _ => linear_settings(global, settings)?,
    };
    let source = access(&settings, kind).and_then(|a| a.credential_source.clone());
    Ok((settings, source))
}

/// Jira's settings: the site (`--site`, else `site` in `[jira]`) and Jira's credential, and no
/// other provider's tokens.
pub(super) fn jira_settings(
    global: &GlobalArgs,
    settings: Settings,
    site: Option<&str>,
) -> Result<Settings, CliError> {
    if global.token_file.is_some() {
        return Err(CliError::refused(
            &"sync jira does not read --token-file: a Jira API token goes with its account's \
             e-mail; set JIRA_EMAIL and JIRA_API_TOKEN, or token_file and email in [jira]",
        ));
    }
    let mut settings = settings;
    if let Some(site) = site {
        let policy = headroom_http::UrlPolicy::for_api_url(site)
            .map_err(|e| CliError::refused(&format!("--site {site}: {e}")))?;
        settings.providers.jira.policy = Some(policy);
    }
    if settings.providers.jira.policy.is_none() {
        return Err(CliError::refused(
            &"sync jira needs the site: --site https://NAME.atlassian.net, or site in [jira]",
        ));
    }
    configured_for(&settings, SyncKind::Jira).ok_or_else(|| {
        CliError::refused(
            &"sync jira needs a Jira credential: set JIRA_EMAIL and JIRA_API_TOKEN (or \
             JIRA_OAUTH_TOKEN with JIRA_OAUTH_CLIENT_ID), or token_file and email in [jira]",
        )
    })
}

/// Linear's settings: its API (`--api-url` given as a flag, else `api_url` in `[linear]`, else
/// api.linear.app) and its key (`--token-file` given as a flag, else `[linear]`,
/// `LINEAR_API_KEY`, `LINEAR_OAUTH_TOKEN`), and no other provider's tokens.
pub(super) fn linear_settings(
    global: &GlobalArgs,
    settings: Settings,
) -> Result<Settings, CliError> {
    keyed_settings(
        global,
        settings,
        SyncKind::Linear,
        "sync linear needs a Linear key: set LINEAR_API_KEY (or LINEAR_OAUTH_TOKEN), or name a \
         file with --token-file",
    )
}

/// LaunchDarkly's settings, as [`linear_settings`] resolves Linear's: `--api-url`, else
/// `api_url` in `[launchdarkly]`, else app.launchdarkly.com; `--token-file`, else
/// `[launchdarkly]`, `LD_ACCESS_TOKEN`, `LD_OAUTH_TOKEN`.
pub(super) fn launchdarkly_settings(
    global: &GlobalArgs,
    settings: Settings,
) -> Result<Settings, CliError> {
    keyed_settings(
        global,
        settings,
        SyncKind::LaunchDarkly,
        "sync launchdarkly needs a LaunchDarkly token: set LD_ACCESS_TOKEN (or LD_OAUTH_TOKEN), \
         or name a file with --token-file",
    )
}

/// The settings of a provider whose token goes as it is (Linear, LaunchDarkly): `--api-url`
/// given as a flag names its API, and `--token-file` given as a flag its token, read as
/// GitHub's and moved here unprefixed. `missing` refuses a command without a token.
fn keyed_settings(
    global: &GlobalArgs,
    settings: Settings,
    kind: SyncKind,
    missing: &str,
) -> Result<Settings, CliError> {
    let mut settings = settings;
    let credential = settings.credential.clone();
    let p = &mut settings.providers;
    let access = match kind {
        SyncKind::LaunchDarkly => &mut p.launchdarkly,
        _ => &mut p.linear,
    };
    if let (Some(url), false) = (&global.api_url, global.env_sourced.api_url) {
        let policy = headroom_http::UrlPolicy::for_api_url(url)
            .map_err(|e| CliError::refused(&format!("--api-url {url}: {e}")))?;
        access.policy = Some(policy);
    }
    if global.token_file.is_some() {
        access.credential = credential;
        access.credential_source = Some("--token-file".to_owned());
        access.configured = Vec::new();
    }
    let mut out = configured_for(&settings, kind).ok_or_else(|| CliError::refused(&missing))?;
    if global.token_file.is_some() {
        out.credential_source = Some("--token-file");
    }
    Ok(out)
}

/// Where `used` was configured (`GITLAB_TOKEN`), as the owners' check names it.
fn source_of(
    used: &headroom_http::Credential,
    configured: &[crate::config::ConfiguredToken],
) -> Option<&'static str> {
    configured
        .iter()
        .find(|t| t.credential.fingerprint() == used.fingerprint())
        .map(|t| t.source)
}

/// The tokens configured beside `used` (other fingerprints): a run refuses to start when one
/// of them belongs to another owner, GitLab's project and group tokens included (each is a bot
/// user of its own: more of them would be more capacity).
fn besides(
    used: &headroom_http::Credential,
    configured: &[crate::config::ConfiguredToken],
) -> Vec<crate::config::ConfiguredToken> {
    let mut out: Vec<crate::config::ConfiguredToken> = Vec::new();
    for token in configured {
        let fingerprint = token.credential.fingerprint();
        if fingerprint != used.fingerprint()
            && !out
                .iter()
                .any(|o| o.credential.fingerprint() == fingerprint)
        {
            out.push(token.clone());
        }
    }
    out
}

/// The settings of a GitLab command: GitLab's API and credential (`--api-url` and
/// `--token-file` when given as flags, else `[gitlab]`, `GITLAB_TOKEN`, `GITLAB_OAUTH_TOKEN`,
/// else gitlab.com), and no other provider's tokens: GitHub's never reach a GitLab host.
pub(super) fn gitlab_settings(
    global: &GlobalArgs,
    mut settings: Settings,
) -> Result<Settings, CliError> {
    let access =
        crate::op_cmd::access_for(headroom_core::signal::Provider::GitLab, global, &settings);
    if access.credential.is_none() {
        return Err(CliError::refused(
            &"sync gitlab needs a GitLab token: set GITLAB_TOKEN (a personal access token) or \
             GITLAB_OAUTH_TOKEN, or name a file with --token-file",
        ));
    }
    let configured = &settings.providers.gitlab.configured;
    (settings.also_configured, settings.credential_source) = match &access.credential {
        Some(used) => (
            besides(used, configured),
            match global.token_file {
                Some(_) => Some("--token-file"),
                None => source_of(used, configured),
            },
        ),
        None => (Vec::new(), None),
    };
    settings.policy = access.policy;
    settings.credential = access.credential;
    Ok(settings)
}
