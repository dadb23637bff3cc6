//! docs/CLI.md, the command-line reference, generated from the clap definitions so that it
//! cannot drift from them: a test renders it and compares it with the committed file.

use clap::Command;

/// What the help texts cannot say: where settings come from, the environment, the file.
const PREAMBLE: &str = "\
# headroom command-line reference

Generated from the command-line definitions (`crates/cli/src/reference.rs`); a test fails when
this file and the definitions disagree. Regenerate with
`HEADROOM_WRITE_CLI_DOCS=1 cargo test -p headroom --bin headroom cli_reference`.

## Where settings come from

Every global option is read, in order, from its flag, its environment variable, `headroom.toml`
(the file named by `--config`/`HEADROOM_CONFIG`, else `./headroom.toml` when it exists), then
its default. `headroom config show [--json]` prints each setting's value and where it came from
(flag, environment variable, config file and line, default); a token only by its source and
fingerprint, a database URL redacted. A value that cannot be used refuses to start (exit 2) with
a message naming the setting, and for a value from the file, the file and line. The token is
never a flag: it would show in `ps` and shell history.

The settings that decide where a credential goes (`api_url`, `token_file`, `ca_bundle`, and each
provider's `api_url`, `token_file` and Jira's `site`) are read only from a file named by `--config` or
`HEADROOM_CONFIG`: when the implicit `./headroom.toml` (a cloned repository's, say) sets one,
every command refuses (exit 2), naming the key and `--config`, rather than send a token to a host
the directory chose, or fall back to a default host.

The config file and the token file are read only when they are regular files (a symlink to one,
such as a mounted secret, is followed) of at most 1 MiB; the CA bundle, of at most 10 MiB. A
FIFO, a device or a directory refuses to start (exit 2), naming the file.

Durations (`--max-deferred-wait`, `max_deferred_wait`) are whole seconds or text such as `90m`,
`2h 30m`, `7d` (a day is 24 h) or ISO 8601 `PT2H`, `P7D`. An in-memory database (`:memory:`,
`sqlite::memory:`, `mode=memory`) is refused by the commands whose rows must outlive them
(`import`, `ingest`, `enrich`, `run`, `sync`, `op`, `demo`, `maintenance`) and by the read-only
ones (it is always new and empty); `quota` and `config show` accept it.

| environment variable | meaning |
| --- | --- |
| `HEADROOM_DB` | `--db`: a SQLite file path or a `postgres://` URL |
| `GITHUB_API_URL` | `--api-url` |
| `GITHUB_TOKEN`, then `GH_TOKEN` | GitHub's token (unless `--token-file`); none means unauthenticated |
| `GITLAB_TOKEN`, then `GITLAB_OAUTH_TOKEN` | GitLab's token, sent as `PRIVATE-TOKEN` (an OAuth token as `Bearer`) |
| `JIRA_EMAIL` and `JIRA_API_TOKEN`, or `JIRA_OAUTH_TOKEN` with `JIRA_OAUTH_CLIENT_ID` | Jira Cloud: the account's e-mail and API token (Basic; the site owns the quota), or an OAuth token (Bearer) and its app's client id (the app owns the points) |
| `LINEAR_API_KEY`, then `LINEAR_OAUTH_TOKEN` | Linear: the API key (raw `Authorization`) or an OAuth token (Bearer) |
| `LD_ACCESS_TOKEN`, then `LD_OAUTH_TOKEN` | LaunchDarkly: the access token (raw `Authorization`) or an OAuth token (Bearer) |
| `HEADROOM_CONFIG` | `--config` |
| `RUST_LOG` | log filter for the JSON lines on stderr (default `warn`) |

`headroom.toml` keys (all optional; unknown keys refuse to start):

| key | flag | type |
| --- | --- | --- |
| `db` | `--db` | text |
| `api_url` | `--api-url` | text (only in a file named by `--config`/`HEADROOM_CONFIG`) |
| `token_file` | `--token-file` | path (only in a file named by `--config`/`HEADROOM_CONFIG`) |
| `ca_bundle` | `--ca-bundle` | path (only in a file named by `--config`/`HEADROOM_CONFIG`) |
| `connect_timeout_secs` | `--connect-timeout` | 1–300 |
| `read_timeout_secs` | `--read-timeout` | 1–600 |
| `in_flight_ceiling` | `--in-flight-ceiling` | 1–100 |
| `max_deferrals` | `--max-deferrals` | 1–10000 |
| `max_deferred_wait` | `--max-deferred-wait` | seconds, or text such as `\"90m\"`, `\"2h\"`, `\"7d\"` (1 s to a week) |
| `retention_days` | `--retention-days` | 1–3650 |
| `sync_caps.share` | none | a table of bucket = share: sync takes the bucket's window to at most this share of its limit (more than 0, at most 1), e.g. `share = { core = 0.7 }` |
| `sync_caps.families` | none | a table of route family = requests sync may send per window of its bucket (docs/ROUTE-FAMILIES.md), e.g. `families = { workflow_jobs = 500 }` |
| `gitlab.api_url`, `linear.api_url`, `launchdarkly.api_url` | `--api-url` for that provider's commands | text (only in a file named by `--config`/`HEADROOM_CONFIG`); defaults `https://gitlab.com/api/v4`, `https://api.linear.app`, `https://app.launchdarkly.com` |
| `gitlab.token_file`, `jira.token_file`, `linear.token_file`, `launchdarkly.token_file` | `--token-file` for that provider's commands | path (only in a file named by `--config`/`HEADROOM_CONFIG`) |
| `jira.site`, `jira.email`, `jira.oauth_client_id` | none | the site (`https://NAME.atlassian.net`; only in a named file), the account's e-mail, and the OAuth app's client id |
| `jira.burst_per_sec` | none | 1–10000 (default 100): requests a second each Jira endpoint is paced to, the site's burst rate per endpoint and method |

Exit codes: 0 ran (or deferred, or hibernating), 1 the attempt failed, 2 refused to run.

";

/// The whole reference for `root`: the preamble, then every command's full help, depth first.
pub fn render(root: &mut Command) -> String {
    let mut out = String::from(PREAMBLE);
    root.build();
    let globals: Vec<String> = root
        .get_arguments()
        .filter(|a| a.is_global_set())
        .map(|a| a.get_id().to_string())
        .collect();
    section(root, &[], &globals, &mut out);
    out
}

/// One command's help; below the root, the global options (listed once, under `headroom`)
/// are left out.
fn section(cmd: &Command, parents: &[&str], globals: &[String], out: &mut String) {
    let mut path: Vec<&str> = parents.to_vec();
    path.push(cmd.get_name());
    let heading = if parents.is_empty() { 2 } else { 3 };
    out.push_str(&format!(
        "{} `{}`\n\n```text\n",
        "#".repeat(heading),
        path.join(" ")
    ));
    let mut shown = cmd.clone();
    if !parents.is_empty() {
        for id in globals {
            if shown.get_arguments().any(|a| a.get_id() == id.as_str()) {
                shown = shown.mut_arg(id, |a| a.hide(true));
            }
        }
    }
    let help = shown.render_long_help().to_string();
    for line in help.lines() {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out.push_str("```\n\n");
    for sub in cmd.get_subcommands().filter(|s| s.get_name() != "help") {
        section(sub, &path, globals, out);
    }
}
