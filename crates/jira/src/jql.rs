//! The JQL a site sync asks: the scope's projects, only what changed since a watermark, oldest
//! change first.
//!
//! Jira reads an absolute date in JQL (`updated >= "2026-03-08 01:30"`) in the searching user's
//! own time zone (`GET /myself` → `timeZone`), to the minute. So the watermark is written in that
//! zone, floored to the minute, minus an overlap. Where the local time is ambiguous (clocks went
//! back: it happened twice) or did not exist (clocks went forward), Jira may read either
//! instant: the time written is moved back until every instant Jira could read is at or before
//! the watermark. A second run then asks again for a little, and misses nothing.

use jiff::civil::DateTime;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};

/// Asked again before the watermark, for clock skew and Jira's eventually consistent search.
pub const OVERLAP: SignedDuration = SignedDuration::from_secs(120);

/// How far back a local time is moved, at most, to clear a zone's transition.
const MAX_SHIFT: SignedDuration = SignedDuration::from_hours(26);

/// Why a JQL could not be written.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum JqlError {
    /// No project named: Jira refuses unbounded JQL on `search/jql`.
    #[error("a Jira search needs at least one project")]
    NoProject,
    /// The watermark cannot be written in the zone (out of range).
    #[error("the watermark {0} cannot be written as a local time")]
    OutOfRange(Timestamp),
}

/// The local minute, in `zone`, to ask `updated >=` for everything changed since `since`: at
/// most `since - OVERLAP`, and read by Jira as no later than that whichever way it resolves a
/// transition.
pub fn local_since(since: Timestamp, zone: &TimeZone) -> Result<DateTime, JqlError> {
    let out_of_range = || JqlError::OutOfRange(since);
    let target = since.checked_sub(OVERLAP).map_err(|_| out_of_range())?;
    let local = zone.to_datetime(target);
    let mut minute = DateTime::new(
        local.year(),
        local.month(),
        local.day(),
        local.hour(),
        local.minute(),
        0,
        0,
    )
    .map_err(|_| out_of_range())?;
    let mut shifted = SignedDuration::ZERO;
    loop {
        if latest_reading(zone, minute).is_some_and(|t| t <= target) {
            return Ok(minute);
        }
        // Inside or just after a transition: step back a quarter hour and look again.
        let step = SignedDuration::from_mins(15);
        minute = minute.checked_sub(step).map_err(|_| out_of_range())?;
        shifted += step;
        if shifted > MAX_SHIFT {
            return Err(out_of_range());
        }
    }
}

/// The latest instant Jira could read `local` as in `zone` (the later of a fold's two, a
/// gap's shifted one).
fn latest_reading(zone: &TimeZone, local: DateTime) -> Option<Timestamp> {
    let ambiguous = zone.to_ambiguous_timestamp(local);
    let earlier = ambiguous.earlier().ok();
    let later = ambiguous.later().ok();
    earlier.into_iter().chain(later).max()
}

/// A JQL string literal: quoted, with `"` and `\` escaped.
fn literal(value: &str) -> String {
    let mut out = String::with_capacity(value.len() + 2);
    out.push('"');
    for c in value.chars() {
        if c == '"' || c == '\\' {
            out.push('\\');
        }
        out.push(c);
    }
    out.push('"');
    out
}

/// The JQL of `projects`' issues, changed since `since` when given (written in `zone`),
/// oldest change first with the id breaking ties: an issue updated while the search is paged
/// moves behind the cursor and is read again, never skipped.
pub fn issues(
    projects: &[&str],
    since: Option<(Timestamp, &TimeZone)>,
) -> Result<String, JqlError> {
    issues_matching(projects, None, since)
}

/// As [`issues`], narrowed by a user's JQL condition (`--jql`), kept whole in parentheses so
/// that its `OR`s cannot widen the search past the projects and the watermark.
pub fn issues_matching(
    projects: &[&str],
    narrower: Option<&str>,
    since: Option<(Timestamp, &TimeZone)>,
) -> Result<String, JqlError> {
    if projects.is_empty() {
        return Err(JqlError::NoProject);
    }
    let keys: Vec<String> = projects.iter().map(|p| literal(p)).collect();
    let mut jql = format!("project in ({})", keys.join(", "));
    if let Some(narrower) = narrower.map(str::trim).filter(|n| !n.is_empty()) {
        jql.push_str(&format!(" AND ({narrower})"));
    }
    if let Some((since, zone)) = since {
        let local = local_since(since, zone)?;
        jql.push_str(&format!(
            " AND updated >= {}",
            literal(&local.strftime("%Y-%m-%d %H:%M").to_string())
        ));
    }
    jql.push_str(" ORDER BY updated ASC, id ASC");
    Ok(jql)
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    fn zone(name: &str) -> TimeZone {
        TimeZone::get(name).expect("the system's time-zone database")
    }

    fn at(text: &str) -> Timestamp {
        text.parse().expect("an instant")
    }

    #[test]
    fn the_watermark_is_written_in_the_users_zone_to_the_minute_with_an_overlap() {
        let jql = issues(
            &["ENG", "OPS"],
            Some((at("2026-07-01T15:04:59Z"), &zone("America/Sao_Paulo"))),
        )
        .expect("valid");
        // 15:04:59Z − 2 min = 15:02:59Z = 12:02:59 in São Paulo (UTC−3), floored to 12:02.
        assert_eq!(
            jql,
            "project in (\"ENG\", \"OPS\") AND updated >= \"2026-07-01 12:02\" ORDER BY updated ASC, id ASC"
        );
        assert_eq!(
            issues(&["ENG"], None).expect("valid"),
            "project in (\"ENG\") ORDER BY updated ASC, id ASC"
        );
        assert_eq!(issues(&[], None), Err(JqlError::NoProject));
        assert_eq!(
            issues_matching(&["ENG"], Some(" status = Done OR labels = x "), None).expect("valid"),
            "project in (\"ENG\") AND (status = Done OR labels = x) ORDER BY updated ASC, id ASC"
        );
        assert_eq!(
            issues_matching(&["ENG"], Some("  "), None).expect("valid"),
            issues(&["ENG"], None).expect("valid")
        );
        assert_eq!(
            issues(&["A\"B\\"], None).expect("valid"),
            "project in (\"A\\\"B\\\\\") ORDER BY updated ASC, id ASC"
        );
    }

    /// New York's clocks went back at 2026-11-01 02:00 EDT: 01:00–02:00 happened twice. A
    /// watermark in the first 01:30 (EDT) written as "01:28" could be read by Jira as the
    /// second 01:28 (EST), an hour after it: changes in between would be missed. So the time
    /// written moves back before the repeated hour. In the second 01:30 (EST), "01:28" is
    /// read at worst as itself, and stays.
    #[test]
    fn a_watermark_in_a_repeated_hour_is_written_before_it() {
        let ny = zone("America/New_York");
        let first = local_since(at("2026-11-01T05:30:00Z"), &ny).expect("valid");
        assert!(first.hour() == 0, "{first}");
        let reading = latest_reading(&ny, first).expect("a reading");
        assert!(
            reading <= at("2026-11-01T05:28:00Z"),
            "{first} reads as {reading}"
        );
        let second = local_since(at("2026-11-01T06:30:00Z"), &ny).expect("valid");
        assert_eq!(second.to_string(), "2026-11-01T01:28:00");
    }

    /// São Paulo no longer changes its clocks, London does: a watermark just after London's
    /// spring-forward gap (01:00 → 02:00 on 2026-03-29) is written as a time that exists.
    #[test]
    fn a_watermark_just_after_a_skipped_hour_is_read_no_later_than_itself() {
        let london = zone("Europe/London");
        let since = at("2026-03-29T01:01:00Z"); // 02:01 BST.
        let local = local_since(since, &london).expect("valid");
        let reading = latest_reading(&london, local).expect("a reading");
        assert!(reading <= since - OVERLAP, "{local} reads as {reading}");
        assert!(since - reading < SignedDuration::from_hours(2), "{local}");
    }

    proptest! {
        /// Whatever the instant and the zone, every instant Jira could read the written time
        /// as is at or before the watermark minus the overlap (nothing is missed), and not
        /// more than a transition plus a minute earlier (little is asked again).
        #[test]
        fn the_written_time_never_misses_a_change_and_asks_again_for_little(
            secs in 1_700_000_000i64..1_900_000_000,
            z in prop::sample::select(vec![
                "UTC", "America/New_York", "Europe/London", "America/Sao_Paulo",
                "Australia/Lord_Howe", "Asia/Kolkata", "Pacific/Chatham",
            ]),
        ) {
            let zone = zone(z);
            let since = Timestamp::from_second(secs).expect("valid");
            let local = local_since(since, &zone).expect("valid");
            let target = since - OVERLAP;
            let a = zone.to_ambiguous_timestamp(local);
            let readings: Vec<Timestamp> =
                [a.earlier().ok(), a.later().ok()].into_iter().flatten().collect();
            prop_assert!(!readings.is_empty());
            for r in &readings {
                prop_assert!(*r <= target, "{z}: {local} reads as {r} > {target}");
                prop_assert!(target - *r <= SignedDuration::from_mins(61 + 15),
                    "{z}: {local} reads as {r}, far before {target}");
            }
        }
    }
}
