//! The JQL a collector sends, parsed and evaluated as Jira does: `project = A` and
//! `project in (A, B)` (keys or ids), `updated`/`created` compared with a date read in the
//! calling user's time zone (`"yyyy-MM-dd HH:mm"`, `"yyyy/MM/dd HH:mm"`, date-only forms,
//! relative periods such as `"-15m"`, unquoted epoch milliseconds), joined by `AND`, then
//! `ORDER BY` up to seven of `updated`, `created`, `id`, `key`. Anything else is refused
//! with a 400 message in Jira's words.

use std::cmp::Ordering;

use headroom_core::clock::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

use super::model::{Issue, Site};

/// A parsed search.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Query {
    pub(crate) clauses: Vec<Clause>,
    /// Field and whether descending.
    pub(crate) order: Vec<(SortField, bool)>,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Clause {
    /// Project indices of the site.
    Project(Vec<usize>),
    Time {
        field: TimeField,
        op: Op,
        at: Timestamp,
    },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TimeField {
    Updated,
    Created,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Op {
    Ge,
    Gt,
    Le,
    Lt,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum SortField {
    Updated,
    Created,
    Id,
    Key,
}

/// Jira's answer to a search without restriction.
pub(crate) const UNBOUNDED: &str =
    "Unbounded JQL queries are not allowed here. Please add a search restriction to your query.";

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Word(String),
    Quoted(String),
    Op(&'static str),
    Open,
    Close,
    Comma,
}

fn tokenize(jql: &str) -> Result<Vec<(Tok, usize)>, String> {
    let chars: Vec<char> = jql.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let at = i + 1;
        match c {
            c if c.is_whitespace() => i += 1,
            '(' | ')' | ',' => {
                out.push((
                    match c {
                        '(' => Tok::Open,
                        ')' => Tok::Close,
                        _ => Tok::Comma,
                    },
                    at,
                ));
                i += 1;
            }
            '"' | '\'' => {
                let end = chars[i + 1..].iter().position(|&d| d == c).ok_or_else(|| {
                    format!("Error in the JQL Query: The quoted string starting at character {at} is not terminated.")
                })?;
                out.push((Tok::Quoted(chars[i + 1..i + 1 + end].iter().collect()), at));
                i += end + 2;
            }
            '>' | '<' | '!' | '=' => {
                let two: String = chars[i..(i + 2).min(chars.len())].iter().collect();
                let op = match two.as_str() {
                    ">=" => ">=",
                    "<=" => "<=",
                    "!=" => "!=",
                    _ => match c {
                        '>' => ">",
                        '<' => "<",
                        '=' => "=",
                        _ => return Err(reserved(c, at)),
                    },
                };
                out.push((Tok::Op(op), at));
                i += op.len();
            }
            c if c.is_alphanumeric() || matches!(c, '_' | '-' | '.' | '/' | ':') => {
                let len = chars[i..]
                    .iter()
                    .take_while(|&&d| {
                        d.is_alphanumeric() || matches!(d, '_' | '-' | '.' | '/' | ':')
                    })
                    .count();
                out.push((Tok::Word(chars[i..i + len].iter().collect()), at));
                i += len;
            }
            c => return Err(reserved(c, at)),
        }
    }
    Ok(out)
}

fn reserved(c: char, at: usize) -> String {
    format!(
        "Error in the JQL Query: The character '{c}' is a reserved JQL character. You must enclose it in a string or use the escape '\\u{:04x}' instead. (line 1, character {at})",
        c as u32
    )
}

fn expecting(what: &str, got: Option<&(Tok, usize)>) -> String {
    match got {
        Some((t, at)) => {
            let shown = match t {
                Tok::Word(w) | Tok::Quoted(w) => w.clone(),
                Tok::Op(o) => (*o).to_owned(),
                Tok::Open => "(".into(),
                Tok::Close => ")".into(),
                Tok::Comma => ",".into(),
            };
            format!(
                "Error in the JQL Query: Expecting {what} but got '{shown}'. (line 1, character {at})"
            )
        }
        None => format!("Error in the JQL Query: Expecting {what} before the end of the query."),
    }
}

struct Parser<'a> {
    toks: Vec<(Tok, usize)>,
    pos: usize,
    site: &'a Site,
    now: Timestamp,
}

/// Parses `jql` for `site`, dates read in `tz` at `now`; `Err` is Jira's 400 message.
pub(crate) fn parse(
    jql: &str,
    site: &Site,
    tz: &TimeZone,
    now: Timestamp,
) -> Result<Query, String> {
    let mut p = Parser {
        toks: tokenize(jql)?,
        pos: 0,
        site,
        now,
    };
    let mut q = Query {
        clauses: Vec::new(),
        order: Vec::new(),
    };
    if !p.at_keyword("order") && p.peek().is_some() {
        q.clauses.push(p.clause(tz)?);
        while p.at_keyword("and") {
            p.pos += 1;
            q.clauses.push(p.clause(tz)?);
        }
    }
    if p.at_keyword("order") {
        p.pos += 1;
        if !p.at_keyword("by") {
            return Err(expecting("'by'", p.peek()));
        }
        p.pos += 1;
        q.order = p.order_by()?;
    }
    if let Some(t) = p.peek() {
        return Err(expecting("either 'AND' or 'ORDER BY'", Some(t)));
    }
    if q.clauses.is_empty() {
        return Err(UNBOUNDED.to_owned());
    }
    Ok(q)
}

impl Parser<'_> {
    fn peek(&self) -> Option<&(Tok, usize)> {
        self.toks.get(self.pos)
    }

    fn next(&mut self) -> Option<(Tok, usize)> {
        let t = self.toks.get(self.pos).cloned();
        self.pos += 1;
        t
    }

    fn at_keyword(&self, k: &str) -> bool {
        matches!(self.peek(), Some((Tok::Word(w), _)) if w.eq_ignore_ascii_case(k))
    }

    fn value(&mut self) -> Result<(String, bool), String> {
        match self.next() {
            Some((Tok::Word(w), _)) => Ok((w, false)),
            Some((Tok::Quoted(w), _)) => Ok((w, true)),
            other => Err(expecting(
                "either a value, 'EMPTY' or a function",
                other.as_ref(),
            )),
        }
    }

    fn clause(&mut self, tz: &TimeZone) -> Result<Clause, String> {
        let field = match self.next() {
            Some((Tok::Word(w), _)) | Some((Tok::Quoted(w), _)) => w,
            other => return Err(expecting("a field name", other.as_ref())),
        };
        match field.to_ascii_lowercase().as_str() {
            "project" => self.project(),
            "updated" | "updateddate" => self.time(TimeField::Updated, &field, tz),
            "created" | "createddate" => self.time(TimeField::Created, &field, tz),
            _ => Err(format!(
                "Field '{field}' does not exist or you do not have permission to view it."
            )),
        }
    }

    fn project(&mut self) -> Result<Clause, String> {
        let mut names = Vec::new();
        match self.next() {
            Some((Tok::Op("="), _)) => names.push(self.value()?.0),
            Some((Tok::Word(w), _)) if w.eq_ignore_ascii_case("in") => {
                if !matches!(self.next(), Some((Tok::Open, _))) {
                    return Err(expecting("'('", self.toks.get(self.pos - 1)));
                }
                loop {
                    names.push(self.value()?.0);
                    match self.next() {
                        Some((Tok::Comma, _)) => continue,
                        Some((Tok::Close, _)) => break,
                        other => return Err(expecting("')'", other.as_ref())),
                    }
                }
            }
            other => return Err(expecting("operator", other.as_ref())),
        }
        let site = self.site;
        let projects = names
            .iter()
            .map(|n| {
                site.projects
                    .iter()
                    .position(|p| {
                        !p.restricted && (p.key.eq_ignore_ascii_case(n) || p.id.to_string() == *n)
                    })
                    .ok_or_else(|| {
                        format!("The value '{n}' does not exist for the field 'project'.")
                    })
            })
            .collect::<Result<Vec<usize>, String>>()?;
        Ok(Clause::Project(projects))
    }

    fn time(&mut self, field: TimeField, name: &str, tz: &TimeZone) -> Result<Clause, String> {
        let op = match self.next() {
            Some((Tok::Op(">="), _)) => Op::Ge,
            Some((Tok::Op(">"), _)) => Op::Gt,
            Some((Tok::Op("<="), _)) => Op::Le,
            Some((Tok::Op("<"), _)) => Op::Lt,
            other => return Err(expecting("operator", other.as_ref())),
        };
        let (text, quoted) = self.value()?;
        let at = date_value(&text, quoted, tz, self.now).ok_or_else(|| {
            format!("Date value '{text}' for field '{name}' is invalid. Valid formats include: 'yyyy/MM/dd HH:mm', 'yyyy-MM-dd HH:mm', 'yyyy/MM/dd', 'yyyy-MM-dd', or a period format e.g. '-5d', '4w 2d'.")
        })?;
        Ok(Clause::Time { field, op, at })
    }

    fn order_by(&mut self) -> Result<Vec<(SortField, bool)>, String> {
        let mut order = Vec::new();
        loop {
            let field = match self.next() {
                Some((Tok::Word(w), _)) => w,
                other => return Err(expecting("a field name", other.as_ref())),
            };
            let f = match field.to_ascii_lowercase().as_str() {
                "updated" | "updateddate" => SortField::Updated,
                "created" | "createddate" => SortField::Created,
                "id" => SortField::Id,
                "key" | "issuekey" => SortField::Key,
                _ => {
                    return Err(format!(
                        "Field '{field}' does not exist or you do not have permission to view it."
                    ));
                }
            };
            let mut desc = false;
            if self.at_keyword("asc") || self.at_keyword("desc") {
                desc = self.at_keyword("desc");
                self.pos += 1;
            }
            order.push((f, desc));
            if !matches!(self.peek(), Some((Tok::Comma, _))) {
                break;
            }
            self.pos += 1;
        }
        if order.len() > 7 {
            return Err("The ORDER BY clause may contain at most 7 fields.".into());
        }
        Ok(order)
    }
}

/// A JQL date: absolute forms in `tz` (minute resolution), periods relative to `now`,
/// unquoted digits as epoch milliseconds.
pub(crate) fn date_value(
    text: &str,
    quoted: bool,
    tz: &TimeZone,
    now: Timestamp,
) -> Option<Timestamp> {
    let t = text.trim();
    if !quoted && !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
        return Timestamp::from_millisecond(t.parse().ok()?).ok();
    }
    if let Some(at) = period(t, now) {
        return Some(at);
    }
    let normal = t.replace('/', "-");
    let civil: DateTime = if normal.len() == 10 {
        jiff::civil::Date::strptime("%Y-%m-%d", &normal)
            .ok()?
            .to_datetime(jiff::civil::Time::midnight())
    } else {
        DateTime::strptime("%Y-%m-%d %H:%M", &normal).ok()?
    };
    // A time skipped by a daylight-saving change moves forward, a repeated one takes the
    // earlier instant: java.time's rule, which Jira follows.
    Some(civil.to_zoned_datetime(tz.clone()).ok()?.timestamp())
}

/// `-15m`, `-2d`, `4w 2d`, `+1h`: a period from now.
fn period(t: &str, now: Timestamp) -> Option<Timestamp> {
    let (sign, rest) = match t.strip_prefix('-') {
        Some(r) => (-1i64, r),
        None => (1, t.strip_prefix('+').unwrap_or(t)),
    };
    let mut secs = 0i64;
    let mut any = false;
    for part in rest.split_whitespace() {
        let (n, unit) = part.split_at(part.len().checked_sub(1)?);
        let n: i64 = n.parse().ok()?;
        secs += n * match unit {
            "w" => 7 * 86_400,
            "d" => 86_400,
            "h" => 3_600,
            "m" => 60,
            _ => return None,
        };
        any = true;
    }
    any.then(|| Timestamp::from_second(now.as_second() + sign * secs).ok())?
}

impl Query {
    /// Whether `issue` matches every clause.
    pub(crate) fn matches(&self, issue: &Issue) -> bool {
        self.clauses.iter().all(|c| match c {
            Clause::Project(ps) => ps.contains(&issue.project),
            Clause::Time { field, op, at } => {
                let t = match field {
                    TimeField::Updated => issue.updated,
                    TimeField::Created => issue.created,
                };
                match op {
                    Op::Ge => t >= *at,
                    Op::Gt => t > *at,
                    Op::Le => t <= *at,
                    Op::Lt => t < *at,
                }
            }
        })
    }

    /// Orders two issues as `ORDER BY` says, then by id.
    pub(crate) fn compare(&self, site: &Site, a: &Issue, b: &Issue) -> Ordering {
        for (field, desc) in &self.order {
            let o = match field {
                SortField::Updated => a.updated.cmp(&b.updated),
                SortField::Created => a.created.cmp(&b.created),
                SortField::Id => a.id.cmp(&b.id),
                SortField::Key => (&site.projects[a.project].key, a.id)
                    .cmp(&(&site.projects[b.project].key, b.id)),
            };
            let o = if *desc { o.reverse() } else { o };
            if o != Ordering::Equal {
                return o;
            }
        }
        a.id.cmp(&b.id)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ny() -> TimeZone {
        TimeZone::get("America/New_York").expect("the tz database has New York")
    }

    fn at(s: &str) -> Timestamp {
        s.parse().expect("instant")
    }

    #[test]
    fn a_jql_date_is_read_in_the_callers_zone_on_both_sides_of_a_dst_change() {
        let now = at("2026-03-09T00:00:00Z");
        // Before the change New York is UTC-5, after it UTC-4.
        assert_eq!(
            date_value("2026-03-08 01:30", true, &ny(), now),
            Some(at("2026-03-08T06:30:00Z"))
        );
        assert_eq!(
            date_value("2026/03/08 03:30", true, &ny(), now),
            Some(at("2026-03-08T07:30:00Z"))
        );
        // 02:30 does not exist that night: java.time moves it forward by the gap.
        assert_eq!(
            date_value("2026-03-08 02:30", true, &ny(), now),
            Some(at("2026-03-08T07:30:00Z"))
        );
        // 01:30 happens twice on 1 November: the earlier (EDT) instant.
        assert_eq!(
            date_value("2026-11-01 01:30", true, &ny(), now),
            Some(at("2026-11-01T05:30:00Z"))
        );
        assert_eq!(
            date_value("2026-03-08", true, &ny(), now),
            Some(at("2026-03-08T05:00:00Z"))
        );
    }

    #[test]
    fn periods_and_epoch_milliseconds_are_jql_dates_too() {
        let now = at("2026-03-09T00:00:00Z");
        assert_eq!(
            date_value("-15m", true, &ny(), now),
            Some(at("2026-03-08T23:45:00Z"))
        );
        assert_eq!(
            date_value("-1w 2d", true, &ny(), now),
            Some(at("2026-02-28T00:00:00Z"))
        );
        assert_eq!(
            date_value("1772928000000", false, &ny(), now),
            Some(at("2026-03-08T00:00:00Z"))
        );
        assert_eq!(date_value("2026-03-08 3pm", true, &ny(), now), None);
    }

    #[test]
    fn the_tokenizer_refuses_what_jql_reserves() {
        assert!(tokenize("project = A & B").is_err());
        assert!(tokenize("project = \"A").is_err());
        let toks = tokenize("updated >= \"2026-03-08 03:30\"").expect("valid");
        assert_eq!(toks[1].0, Tok::Op(">="));
        assert_eq!(toks[2].0, Tok::Quoted("2026-03-08 03:30".into()));
    }
}
