//! Setting values as the user writes them: whole numbers in a range, durations (seconds, `90m`,
//! `2h 30m`, `7d`, ISO 8601 `PT2H`, `P7D`), and whether a database target keeps its rows.

use headroom_core::clock::SignedDuration;

use super::{ConfigError, invalid};

/// The longest episode of waiting a setting may allow: a week.
pub(super) const MAX_DEFERRED_WAIT_SECS: u64 = 7 * 24 * 3600;

/// A whole number between `min` and `max`, or an error naming `setting`.
pub(super) fn parse_number(
    setting: &str,
    raw: &str,
    min: u64,
    max: u64,
) -> Result<u64, ConfigError> {
    let n: u64 = raw
        .trim()
        .parse()
        .map_err(|_| invalid(setting, format!("`{raw}` is not a whole number")))?;
    if !(min..=max).contains(&n) {
        return Err(invalid(setting, format!("{n} is outside {min}-{max}")));
    }
    Ok(n)
}

/// A deferral budget's total wait: a duration between 1 s and a week.
pub(super) fn parse_wait(setting: &str, raw: &str) -> Result<SignedDuration, ConfigError> {
    let secs = duration_secs(raw).ok_or_else(|| {
        invalid(
            setting,
            format!(
                "`{}` is not a duration (seconds, or e.g. 90m, 2h, 7d)",
                raw.trim()
            ),
        )
    })?;
    if !(1..=MAX_DEFERRED_WAIT_SECS).contains(&secs) {
        return Err(invalid(
            setting,
            format!("{secs} s is outside 1 s-{MAX_DEFERRED_WAIT_SECS} s (a week)"),
        ));
    }
    Ok(SignedDuration::from_secs(
        i64::try_from(secs).unwrap_or(i64::MAX),
    ))
}

/// Whole seconds, or a duration: `90m`, `2h 30m`, `1d 12h`, `7d`, `1w`, or ISO 8601 (`PT2H`,
/// `P7D`, `P1DT12H`). A day is 24 hours here: jiff's durations refuse days because a calendar
/// day is not always 24 hours, but a budget of waiting is elapsed time, and the documented
/// range runs to a week.
pub(super) fn duration_secs(raw: &str) -> Option<u64> {
    let raw = raw.trim();
    if raw.is_empty() {
        return None;
    }
    if let Ok(n) = raw.parse::<u64>() {
        return Some(n);
    }
    if let Some(secs) = friendly_secs(raw) {
        return Some(secs);
    }
    // jiff's own forms: fractions (`1.5h`), ISO 8601 without days (`PT2H`).
    if let Ok(d) = raw.parse::<SignedDuration>() {
        return u64::try_from(d.as_secs()).ok();
    }
    let upper = raw.to_ascii_uppercase();
    let iso = upper.strip_prefix('P')?;
    let (date, time) = iso.split_once('T').unwrap_or((iso, ""));
    let date_secs = match date {
        "" => 0,
        d => {
            let (n, unit) = d.split_at(d.len().checked_sub(1)?);
            let n: u64 = n.parse().ok()?;
            match unit {
                "D" => n.checked_mul(86_400)?,
                "W" => n.checked_mul(7 * 86_400)?,
                _ => return None,
            }
        }
    };
    let time_secs = match time {
        "" if date.is_empty() => return None,
        "" => 0,
        t => {
            let d: SignedDuration = format!("PT{t}").parse().ok()?;
            u64::try_from(d.as_secs()).ok()?
        }
    };
    date_secs.checked_add(time_secs)
}

/// `1d 12h`, `90m`, `2 hours 30 minutes`: numbers each followed by a unit, blanks or commas
/// between them.
fn friendly_secs(raw: &str) -> Option<u64> {
    let mut total: u64 = 0;
    let mut rest = raw.trim();
    while !rest.is_empty() {
        let digits = rest
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(rest.len());
        if digits == 0 {
            return None;
        }
        let n: u64 = rest[..digits].parse().ok()?;
        rest = rest[digits..].trim_start();
        let unit_len = rest
            .find(|c: char| !c.is_ascii_alphabetic())
            .unwrap_or(rest.len());
        let unit = match rest[..unit_len].to_ascii_lowercase().as_str() {
            "w" | "wk" | "week" | "weeks" => 7 * 86_400,
            "d" | "day" | "days" => 86_400,
            "h" | "hr" | "hrs" | "hour" | "hours" => 3_600,
            "m" | "min" | "mins" | "minute" | "minutes" => 60,
            "s" | "sec" | "secs" | "second" | "seconds" => 1,
            _ => return None,
        };
        total = total.checked_add(n.checked_mul(unit)?)?;
        rest = rest[unit_len..].trim_start_matches([' ', ',']);
    }
    Some(total)
}

/// Whether a database target is SQLite in memory, whose rows vanish when the process exits
/// (the forms the store opens in memory, and sqlx's `mode=memory` parameter).
pub fn in_memory(db: &str) -> bool {
    if matches!(db, ":memory:" | "sqlite::memory:" | "sqlite://:memory:") {
        return true;
    }
    db.strip_prefix("sqlite:")
        .and_then(|rest| rest.split_once('?'))
        .is_some_and(|(_, query)| {
            query
                .split('&')
                .any(|pair| pair.eq_ignore_ascii_case("mode=memory"))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Defect: `--max-deferred-wait 7d` was refused as "not a duration" though the documented
    /// range runs to a week. Days (and weeks) are durations, in flags and in the file alike.
    #[test]
    fn a_wait_of_days_is_a_duration_up_to_a_week() {
        for (raw, secs) in [
            ("7d", 7 * 86_400),
            ("1d 12h", 36 * 3_600),
            ("1w", 7 * 86_400),
            ("2 days", 2 * 86_400),
            ("P7D", 7 * 86_400),
            ("P1DT12H", 36 * 3_600),
            ("PT2H", 7_200),
            ("90m", 5_400),
            ("2h 30m", 9_000),
            ("1.5h", 5_400),
            ("5400", 5_400),
        ] {
            assert_eq!(duration_secs(raw), Some(secs), "{raw}");
            assert_eq!(
                parse_wait("--max-deferred-wait", raw).map(|d| d.as_secs()),
                Ok(i64::try_from(secs).unwrap_or(0)),
                "{raw}"
            );
        }
        for raw in ["", "soon", "d", "7x", "P", "PD", "-1d", "7d soon"] {
            assert_eq!(duration_secs(raw), None, "{raw}");
        }
        let over = parse_wait("--max-deferred-wait", "8d").expect_err("over a week");
        assert!(over.problem.contains("a week"), "{over}");
        assert!(parse_wait("--max-deferred-wait", "0s").is_err());
    }

    #[test]
    fn in_memory_targets_are_recognized() {
        for db in [
            ":memory:",
            "sqlite::memory:",
            "sqlite://:memory:",
            "sqlite://x.db?mode=memory",
        ] {
            assert!(in_memory(db), "{db}");
        }
        for db in [
            "./headroom.db",
            "memory.db",
            "postgres://h/db",
            "sqlite://x.db",
        ] {
            assert!(!in_memory(db), "{db}");
        }
    }
}
