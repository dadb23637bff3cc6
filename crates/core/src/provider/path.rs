//! How a name goes into an API URL, the same for every provider: each path segment
//! percent-encoded, so a name stays inside its segment whatever it holds (`/`, `?`, `#`, `%`).
//!
//! Encoding alone is not enough: the WHATWG URL parser, which the exit door resolves every
//! target with, treats a segment `.`, `..`, `%2e` or `%2E%2e` as a dot segment and removes it
//! with its parent. A segment equal to `.` or `..` is therefore refused here (and `%` itself
//! is encoded, so an input `%2e%2e` becomes `%252e%252e`, which no parser reads as a dot).
//! An empty segment is refused too: `//` would let a name shift the segments after it.

use super::names::InvalidName;

/// Whether `b` is left as is: RFC 3986's unreserved characters.
fn unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~')
}

/// Every byte outside the unreserved set as `%XX`.
fn encode(text: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if unreserved(b) {
            out.push(char::from(b));
        } else {
            out.push('%');
            out.push(char::from(HEX[usize::from(b >> 4)]));
            out.push(char::from(HEX[usize::from(b & 0x0f)]));
        }
    }
    out
}

/// One path segment: `text` percent-encoded, `/` included (GitLab's `alice%2Fwidgets`,
/// GitHub's `branches/feature%2Fx/protection`). Refuses an empty segment and `.`/`..`.
pub fn segment(text: &str) -> Result<String, InvalidName> {
    match text {
        "" => Err(InvalidName {
            what: "path segment",
            value: text.to_owned(),
            reason: "is empty",
        }),
        "." | ".." => Err(InvalidName {
            what: "path segment",
            value: text.to_owned(),
            reason: "is a dot segment",
        }),
        _ => Ok(encode(text)),
    }
}

/// Several segments: `text` split at `/`, each part encoded by [`segment`], joined by `/` (a
/// ref's `heads/feature/x` as GitHub's git refs endpoints take it).
pub fn segments(text: &str) -> Result<String, InvalidName> {
    let parts = text
        .split('/')
        .map(segment)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(parts.join("/"))
}

/// A query string value, percent-encoded (`&`, `=`, `+`, `#` included).
pub fn query_value(text: &str) -> String {
    encode(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_keeps_every_delimiter_inside_it() {
        assert_eq!(segment("alice/widgets").as_deref(), Ok("alice%2Fwidgets"));
        assert_eq!(segment("a#b?c%2e").as_deref(), Ok("a%23b%3Fc%252e"));
        assert_eq!(segment("é").as_deref(), Ok("%C3%A9"));
        assert_eq!(segment("v1.0_x-y~").as_deref(), Ok("v1.0_x-y~"));
        assert_eq!(
            segments("heads/feature/x y").as_deref(),
            Ok("heads/feature/x%20y")
        );
        assert_eq!(query_value("a&b=c+d"), "a%26b%3Dc%2Bd");
    }

    #[test]
    fn dot_and_empty_segments_are_refused() {
        for bad in ["", ".", ".."] {
            assert!(segment(bad).is_err(), "{bad:?}");
        }
        for bad in ["a/../b", "a//b", "./a", "a/"] {
            assert!(segments(bad).is_err(), "{bad:?}");
        }
        // A literal `%2e%2e` is encoded, not read as a dot segment.
        assert_eq!(segment("%2e%2e").as_deref(), Ok("%252e%252e"));
    }
}
