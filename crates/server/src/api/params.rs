//! Strict query parsing shared by the dashboard's endpoints: every parameter is known, given
//! at most once and well formed, or the request is a 400 that names it.

use headroom_core::clock::Timestamp;

use crate::ApiError;

/// A refusal naming its parameter.
pub fn bad(code: &'static str, parameter: &str, message: String) -> ApiError {
    ApiError::BadRequest {
        code,
        parameter: parameter.to_owned(),
        message,
    }
}

/// The query's pairs, refusing unknown and repeated names.
pub fn pairs(raw: Option<&str>, accepted: &[&str]) -> Result<Vec<(String, String)>, ApiError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for (name, value) in form_urlencoded::parse(raw.unwrap_or("").as_bytes()) {
        if !accepted.contains(&name.as_ref()) {
            let list = if accepted.is_empty() {
                "none".to_owned()
            } else {
                accepted.join(", ")
            };
            return Err(bad(
                "unknown_parameter",
                &name,
                format!("unknown parameter `{name}`; accepted: {list}"),
            ));
        }
        if out.iter().any(|(n, _)| *n == name) {
            return Err(bad(
                "repeated_parameter",
                &name,
                format!("parameter `{name}` is given more than once"),
            ));
        }
        out.push((name.into_owned(), value.into_owned()));
    }
    Ok(out)
}

/// An instant: RFC 3339 (`2026-01-05T14:00:00Z`) or epoch milliseconds.
pub fn instant(name: &str, raw: &str) -> Result<Timestamp, ApiError> {
    if let Ok(ms) = raw.parse::<i64>() {
        return Timestamp::from_millisecond(ms).map_err(|e| {
            bad(
                "invalid_parameter",
                name,
                format!("{name} is out of range: {e}"),
            )
        });
    }
    raw.parse::<Timestamp>().map_err(|_| {
        bad(
            "invalid_parameter",
            name,
            format!("{name} must be an RFC 3339 instant or epoch milliseconds (got `{raw}`)"),
        )
    })
}

/// A count within `1..=max`.
pub fn limit(name: &str, raw: &str, max: u32) -> Result<u32, ApiError> {
    raw.parse::<u32>()
        .ok()
        .filter(|n| (1..=max).contains(n))
        .ok_or_else(|| {
            bad(
                "invalid_parameter",
                name,
                format!("{name} must be an integer from 1 to {max} (got `{raw}`)"),
            )
        })
}

/// A positive id.
pub fn id(name: &str, raw: &str) -> Result<i64, ApiError> {
    raw.parse::<i64>().ok().filter(|id| *id > 0).ok_or_else(|| {
        bad(
            "invalid_parameter",
            name,
            format!("{name} must be a positive id (got `{raw}`)"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_and_repeated_parameters_are_refused_by_name() {
        assert!(pairs(Some("a=1&b=2"), &["a", "b"]).is_ok());
        for (raw, code, parameter) in [
            ("c=1", "unknown_parameter", "c"),
            ("a=1&a=2", "repeated_parameter", "a"),
        ] {
            match pairs(Some(raw), &["a", "b"]) {
                Err(ApiError::BadRequest {
                    code: c,
                    parameter: p,
                    ..
                }) => assert_eq!((c, p.as_str()), (code, parameter)),
                other => panic!("{raw}: {other:?}"),
            }
        }
    }

    #[test]
    fn instants_read_as_rfc3339_or_milliseconds() {
        let t = Timestamp::from_millisecond(1_800_000_000_000).expect("valid");
        assert_eq!(instant("since", "1800000000000").ok(), Some(t));
        assert_eq!(instant("since", &t.to_string()).ok(), Some(t));
        assert!(instant("since", "yesterday").is_err());
        assert!(limit("limit", "0", 100).is_err());
        assert!(limit("limit", "101", 100).is_err());
        assert_eq!(limit("limit", "7", 100).ok(), Some(7));
    }
}
