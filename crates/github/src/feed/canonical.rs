//! Canonical JSON for quarantine fingerprints: compact UTF-8, object keys sorted recursively
//! (by their UTF-8 bytes), array order kept, integers written exactly.
//!
//! Written out by hand rather than trusting `serde_json`'s map order: a dev-dependency can turn
//! on `preserve_order` through feature unification and silently change every fingerprint.

use serde_json::Value;
use sha2::{Digest, Sha256};

/// The canonical text of a JSON value.
pub fn canonical_json(value: &Value) -> String {
    let mut out = String::with_capacity(256);
    write_value(value, &mut out);
    out
}

/// Lowercase hex SHA-256 of [`canonical_json`].
pub fn fingerprint(value: &Value) -> String {
    hex_sha256(canonical_json(value).as_bytes())
}

/// Lowercase hex SHA-256 of raw bytes (the fingerprint of a line that was not JSON at all).
pub fn hex_sha256(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    let mut out = String::with_capacity(64);
    for byte in digest {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0x0f)]));
    }
    out
}

const HEX: &[u8; 16] = b"0123456789abcdef";

fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        // `Number`'s Display is exact for integers (i64/u64) and the shortest round-trip form
        // for floats.
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => write_string(s, out),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.as_bytes().cmp(b.0.as_bytes()));
            out.push('{');
            for (i, (key, item)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_string(key, out);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// JSON string escaping: `"` `\` and control characters; everything else as UTF-8.
fn write_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{08}' => out.push_str("\\b"),
            '\u{0c}' => out.push_str("\\f"),
            c if u32::from(c) < 0x20 => {
                let code = u32::from(c);
                out.push_str("\\u00");
                out.push(char::from(HEX[(code >> 4) as usize]));
                out.push(char::from(HEX[(code & 0x0f) as usize]));
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn keys_are_sorted_recursively_and_output_is_compact() {
        let v = json!({"b": 1, "a": {"z": [3, {"y": true, "x": null}], "c": "é\n\u{1}"}});
        assert_eq!(
            canonical_json(&v),
            r#"{"a":{"c":"é\n\u0001","z":[3,{"x":null,"y":true}]},"b":1}"#
        );
    }

    #[test]
    fn the_same_content_in_another_order_has_one_fingerprint() {
        let a: Value =
            serde_json::from_str(r#"{"id":"1","payload":{"head":"x","ref":"r"}}"#).expect("json");
        let b: Value = serde_json::from_str(r#"{ "payload" : {"ref":"r","head":"x"}, "id":"1" }"#)
            .expect("json");
        assert_eq!(fingerprint(&a), fingerprint(&b));
        assert_eq!(fingerprint(&a).len(), 64);
        let c: Value =
            serde_json::from_str(r#"{"id":"2","payload":{"head":"x","ref":"r"}}"#).expect("json");
        assert_ne!(fingerprint(&a), fingerprint(&c));
    }

    #[test]
    fn integers_stay_exact() {
        let v: Value = serde_json::from_str(
            r#"{"big":18446744073709551615,"neg":-9223372036854775808,"f":1.5}"#,
        )
        .expect("json");
        assert_eq!(
            canonical_json(&v),
            r#"{"big":18446744073709551615,"f":1.5,"neg":-9223372036854775808}"#
        );
    }

    #[test]
    fn known_digest() {
        // sha256 of the two bytes `{}`.
        assert_eq!(
            fingerprint(&json!({})),
            "44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
    }
}
