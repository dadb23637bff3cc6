//! Redaction: credentials never reach a log, an error message or the database.
//!
//! [`redact`] masks every credential shape headroom knows — Authorization headers, Bearer and
//! Basic credentials, provider token prefixes, `token=`-style pairs, URL userinfo — with
//! [`MARKER`], then truncates. Redaction runs before truncation so a cut can never leave half
//! a token behind. It is idempotent: redacting redacted text changes nothing.

use std::sync::LazyLock;

use regex::Regex;

/// What a credential is replaced with.
pub const MARKER: &str = "[REDACTED]";

/// Longest text kept, in characters (after redaction).
pub const MAX_LEN: usize = 4000;

/// Patterns, applied in order. Each replacement keeps the label and masks the secret.
static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    let rules: [(&str, &str); 8] = [
        // Authorization / Proxy-Authorization headers, any scheme, as header lines, JSON or
        // debug dumps: keep the name, mask the value up to the end of the line or string.
        (
            r#"(?i)\b((?:proxy-)?authorization)("?\s*[:=]\s*"?)[^"\r\n]+"#,
            "${1}${2}[REDACTED]",
        ),
        // Bearer credentials, with or without a header name.
        (r"(?i)\b(bearer)\s+[A-Za-z0-9\-._~+/]+=*", "${1} [REDACTED]"),
        // HTTP Basic blobs.
        (r"(?i)\b(basic)\s+[A-Za-z0-9+/]{6,}=*", "${1} [REDACTED]"),
        // Provider token prefixes: GitHub; GitLab's personal, OAuth-application, deploy,
        // runner, trigger, feed, SCIM and job tokens; Linear's API keys and OAuth tokens;
        // Atlassian API tokens (Jira); LaunchDarkly's `api-` tokens; Slack.
        (
            r"\b(?:gh[pousr]_[A-Za-z0-9_]+|github_pat_[A-Za-z0-9_]+|gl(?:pat|oas|dt|rt|ptt|ft|soat|cbt|imt|agent|ffct|wt)-[A-Za-z0-9_\-]+|lin_(?:api|oauth)_[A-Za-z0-9]+|AT[AC]TT3[A-Za-z0-9_\-=]+|api-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}|xox[bpar]-[A-Za-z0-9\-]+)",
            "[REDACTED]",
        ),
        // key=value pairs (query strings, form bodies, log fields).
        (
            r#"(?i)\b(private_token|access_token|api_key|token|secret|password|sslpassword|passwd|pwd)=[^&\s"',;]+"#,
            "${1}=[REDACTED]",
        ),
        // The same keys as JSON members.
        (
            r#"(?i)("(?:private_token|access_token|api_key|token|secret)"\s*:\s*)"[^"]*""#,
            "${1}\"[REDACTED]\"",
        ),
        // URL userinfo with a password, scheme://user:pass@host: the password runs to the last
        // `@` before the next blank, since it may hold an unencoded `/`, `?`, `#` or `@` (which
        // end an authority). A `@` later in a path masks the host too: better than a password.
        (
            r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#@\s:]*:\S*@",
            "${1}[REDACTED]@",
        ),
        // URL userinfo: scheme://user:pass@host — everything of the authority before its last
        // `@`, since a password may hold an unencoded `@`.
        (
            r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/?#\s]*@",
            "${1}[REDACTED]@",
        ),
    ];
    rules
        .into_iter()
        .map(|(pattern, replacement)| {
            // The patterns are constants checked by the tests below.
            #[allow(clippy::expect_used)]
            let regex = Regex::new(pattern).expect("redaction patterns are valid");
            (regex, replacement)
        })
        .collect()
});

/// Masks every credential in `text`, then truncates to [`MAX_LEN`] characters.
pub fn redact(text: &str) -> String {
    let mut out = text.to_owned();
    for (regex, replacement) in PATTERNS.iter() {
        if regex.is_match(&out) {
            out = regex.replace_all(&out, *replacement).into_owned();
        }
    }
    truncate(out, MAX_LEN)
}

/// Redacts the display of an error or any other value.
pub fn redact_display(value: &dyn std::fmt::Display) -> String {
    redact(&value.to_string())
}

/// One URL shown whole (a database target): everything between `://` and its last `@` is
/// masked, whatever it holds — a password may hold a blank, which ends a URL in free text —
/// then [`redact`].
pub fn redact_url(url: &str) -> String {
    redact_about_url(url, url)
}

/// `text` about `url` (why it cannot be opened): the URL's userinfo, and its password alone,
/// are masked wherever they appear, since a parser may quote either; then [`redact`].
pub fn redact_about_url(url: &str, text: &str) -> String {
    let mut out = text.to_owned();
    if let Some(userinfo) = userinfo(url) {
        out = out.replace(userinfo, MARKER);
        if let Some((_, password)) = userinfo.split_once(':')
            && !password.is_empty()
        {
            out = out.replace(password, MARKER);
        }
    }
    redact(&out)
}

/// Everything between a URL's `://` and its last `@`, if not empty.
fn userinfo(url: &str) -> Option<&str> {
    let (_, rest) = url.split_once("://")?;
    let at = rest.rfind('@')?;
    rest.get(..at).filter(|u| !u.is_empty())
}

/// Masks every credential in each string of a JSON document (keys and values), keeping its
/// shape: a stored summary stays a valid document with the same members.
pub fn redact_json(value: &serde_json::Value) -> serde_json::Value {
    use serde_json::Value;
    match value {
        Value::String(text) => Value::String(redact(text)),
        Value::Array(items) => Value::Array(items.iter().map(redact_json).collect()),
        Value::Object(members) => Value::Object(
            members
                .iter()
                .map(|(k, v)| (redact(k), redact_json(v)))
                .collect(),
        ),
        other => other.clone(),
    }
}

fn truncate(mut text: String, max_chars: usize) -> String {
    if let Some((cut, _)) = text.char_indices().nth(max_chars) {
        text.truncate(cut);
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &str) {
        let once = redact(input);
        assert_eq!(once, expected, "input: {input}");
        assert_eq!(redact(&once), once, "idempotent for: {input}");
    }

    #[test]
    fn authorization_headers_any_scheme() {
        check(
            "Authorization: Bearer ghp_abc123",
            "Authorization: [REDACTED]",
        );
        check(
            "authorization: token gho_16C7e42F292c6912E7710c838347Ae178B4a",
            "authorization: [REDACTED]",
        );
        check(
            "Proxy-Authorization: Basic dXNlcjpwYXNz\nnext line",
            "Proxy-Authorization: [REDACTED]\nnext line",
        );
        check(
            r#"{"authorization":"Bearer abc.def","status":403}"#,
            r#"{"authorization":"[REDACTED]","status":403}"#,
        );
        check(
            "403 rate limited -- Authorization: Bearer ghp_FAKE1234567890",
            "403 rate limited -- Authorization: [REDACTED]",
        );
    }

    #[test]
    fn json_documents_keep_their_shape_and_lose_their_credentials() {
        let doc = serde_json::json!({
            "stages": [{"detail": "403 from https://x:ghp_abcdef123@h/", "rows": 3}],
            "token=abc": true,
            "n": 1,
        });
        let out = redact_json(&doc);
        assert_eq!(
            out,
            serde_json::json!({
                "stages": [{"detail": "403 from https://[REDACTED]@h/", "rows": 3}],
                "token=[REDACTED]": true,
                "n": 1,
            })
        );
        assert_eq!(redact_json(&out), out, "idempotent");
    }

    #[test]
    fn bearer_and_basic_without_a_header_name() {
        check(
            "sent Bearer eyJhbGciOiJIUzI1NiJ9.e30.abc-_ ok",
            "sent Bearer [REDACTED] ok",
        );
        check(
            "using basic dXNlcjpwYXNzd29yZA== now",
            "using basic [REDACTED] now",
        );
    }

    #[test]
    fn provider_token_prefixes() {
        for token in [
            "ghp_16C7e42F292c6912E7710c838347Ae178B4a",
            "gho_16C7e42F292c6912E7710c838347Ae178B4a",
            "ghu_16C7e42F292c6912E7710c838347Ae178B4a",
            "ghs_16C7e42F292c6912E7710c838347Ae178B4a",
            "ghr_16C7e42F292c6912E7710c838347Ae178B4a",
            "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
            "glpat-xxxxXXXX1234-abcd_ef",
            "gloas-0123456789abcdef",
            "gldt-AbCdEf123456",
            "glrt-t1_AbCdEf123456",
            "lin_api_0123456789abcdefABCDEF0123456789abcdefAB",
            "lin_oauth_0123456789abcdef0123456789abcdef0123456789abcdef",
            "ATATT3xFfGF0T4JNjZ0C0bT2fKf-EXAMPLE_token=ABCD1234",
            "ATCTT3xFfGF0scopedEXAMPLE_token=ABCD",
            "api-0a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d",
            "xoxb-1234-5678-abcdEFGH",
            "xoxp-1234-5678-abcdEFGH",
            "xoxa-2-1234-abcd",
            "xoxr-1234-abcd",
        ] {
            check(&format!("token was {token}."), "token was [REDACTED].");
        }
    }

    #[test]
    fn key_value_pairs() {
        check(
            "GET /api/v4/projects?private_token=glpat-abc&page=2",
            "GET /api/v4/projects?private_token=[REDACTED]&page=2",
        );
        check(
            "access_token=abc123 expires",
            "access_token=[REDACTED] expires",
        );
        check(
            "api_key=XYZ;secret=shh, token=t0k",
            "api_key=[REDACTED];secret=[REDACTED], token=[REDACTED]",
        );
        check(
            r#"{"token": "abc", "secret":"s3"}"#,
            r#"{"token": "[REDACTED]", "secret":"[REDACTED]"}"#,
        );
    }

    #[test]
    fn url_userinfo() {
        check(
            "redis://:hunter2@cache:6379/0 refused",
            "redis://[REDACTED]@cache:6379/0 refused",
        );
        check(
            "amqp://user:pass@broker/vhost",
            "amqp://[REDACTED]@broker/vhost",
        );
        check(
            "https://x-access-token:abc@github.com/o/r.git",
            "https://[REDACTED]@github.com/o/r.git",
        );
    }

    /// Every credential form of a database URL: userinfo (a password with an unencoded `@`
    /// included) and password parameters.
    #[test]
    fn database_urls() {
        check(
            "cannot open postgres://alice:SEC@RETPW@127.0.0.1:1/db: refused",
            "cannot open postgres://[REDACTED]@127.0.0.1:1/db: refused",
        );
        check(
            "postgres://alice@127.0.0.1:1/db?password=SECRETPW&sslmode=disable",
            "postgres://[REDACTED]@127.0.0.1:1/db?password=[REDACTED]&sslmode=disable",
        );
        check(
            "postgresql://h/db?sslpassword=KEYPW",
            "postgresql://h/db?sslpassword=[REDACTED]",
        );
        check(
            "host=db user=alice password=SECRETPW dbname=x",
            "host=db user=alice password=[REDACTED] dbname=x",
        );
    }

    /// Defect: a password holding `/`, `?`, `#` or a blank was printed, since those end an
    /// authority. In free text the password runs to the last `@` before a blank; a URL shown
    /// whole is masked up to its last `@`, blanks included.
    #[test]
    fn a_password_holding_url_delimiters_is_masked() {
        for delimiter in ["/", "?", "#", "/?#@"] {
            let url = format!("postgres://alice:SEC{delimiter}RETPW@127.0.0.1:1/db");
            check(
                &format!("cannot open {url}: refused"),
                "cannot open postgres://[REDACTED]@127.0.0.1:1/db: refused",
            );
            assert_eq!(redact_url(&url), "postgres://[REDACTED]@127.0.0.1:1/db");
        }
        let url = "postgres://alice:SEC RETPW@127.0.0.1:1/db";
        assert_eq!(redact_url(url), "postgres://[REDACTED]@127.0.0.1:1/db");
        let about = redact_about_url(url, "bad userinfo `SEC RETPW`; password SEC RETPW");
        assert!(
            !about.contains("SEC") && !about.contains("RETPW"),
            "{about}"
        );
        assert_eq!(redact_url("./headroom.db"), "./headroom.db");
        assert_eq!(
            redact_url("postgres://h/db?password=X"),
            "postgres://h/db?password=[REDACTED]"
        );
    }

    #[test]
    fn innocent_text_passes_through_unchanged() {
        for text in [
            "403 Forbidden: Resource not accessible by integration",
            "GET https://api.github.com/repos/rust-lang/rust/pulls?page=2&per_page=100",
            "x-ratelimit-remaining: 0, resets at 2026-11-30T14:32:00Z",
            "the token bucket is empty; tokens are not capacity",
            "ghost_user pushed to refs/heads/main",
            "email alice@example.com wrote",
            "basic usage",
            "",
        ] {
            check(text, text);
        }
    }

    #[test]
    fn redaction_happens_before_truncation() {
        let padding = "x".repeat(MAX_LEN - 10);
        let text = format!("{padding} Authorization: Bearer ghp_{}", "a".repeat(50));
        let out = redact(&text);
        assert!(out.chars().count() <= MAX_LEN);
        assert!(!out.contains("ghp_"), "{}", &out[out.len() - 40..]);
        assert!(!out.contains("aaaa"));
        assert_eq!(redact(&out), out);
    }

    #[test]
    fn truncation_respects_characters() {
        let text = "é".repeat(MAX_LEN + 10);
        let out = redact(&text);
        assert_eq!(out.chars().count(), MAX_LEN);
    }
}
