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
    let rules: [(&str, &str); 7] = [
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
        // Provider token prefixes: GitHub, GitLab, Slack.
        (
            r"\b(?:gh[pousr]_[A-Za-z0-9_]+|github_pat_[A-Za-z0-9_]+|glpat-[A-Za-z0-9_\-]+|xox[bpar]-[A-Za-z0-9\-]+)",
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
