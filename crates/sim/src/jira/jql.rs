//! The JQL a collector sends, parsed and evaluated as Jira does, for a documented subset:
//! clauses joined by `AND` and `OR` (`AND` binding tighter), negated by `NOT`, grouped in
//! parentheses; then `ORDER BY` up to seven of `updated`, `created`, `id`, `key`. A clause is
//! `project`, `status`, `issuetype` (`type`), `priority`, `labels`, `assignee` or `reporter`
//! with `=`, `!=`, `in (…)`, `not in (…)`, `is [not] EMPTY` (names or ids; people by
//! `accountId`; `!=` never matches an empty field, as Jira documents), or `updated`/`created`
//! compared with a date read in the calling user's time zone (`"yyyy-MM-dd HH:mm"`,
//! `"yyyy/MM/dd HH:mm"`, date-only forms, relative periods such as `"-15m"`, unquoted epoch
//! milliseconds). Anything else (other fields, functions, `~`, `was`, `changed`) is refused
//! with a 400 message in Jira's words.

use std::cmp::Ordering;

use headroom_core::clock::Timestamp;
use jiff::civil::DateTime;
use jiff::tz::TimeZone;

use super::model::{Issue, Site};
use super::render::{ISSUE_TYPES, PRIORITIES, STATUSES};

/// A parsed search.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Query {
    /// What an issue must match; `None` matches none (Jira refuses it as unbounded).
    pub(crate) filter: Option<Expr>,
    /// Field and whether descending.
    pub(crate) order: Vec<(SortField, bool)>,
}

/// A search condition.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Expr {
    And(Vec<Expr>),
    Or(Vec<Expr>),
    Not(Box<Expr>),
    Clause(Clause),
}

/// A field an equality clause compares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Attr {
    Project,
    Status,
    IssueType,
    Priority,
    Labels,
    Assignee,
    Reporter,
}

#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Clause {
    /// `field = v`, `in (…)`, `is EMPTY` (`negated`: `!=`, `not in`, `is not`). The values
    /// are canonical (an index or an id, a label, an `accountId`); `None` is `EMPTY`.
    Is {
        attr: Attr,
        negated: bool,
        values: Vec<Option<String>>,
    },
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
    /// The searching user, whom `currentUser()` names.
    caller: usize,
}

/// Parses `jql` for `site` searched by user `caller`, dates read in `tz` at `now`; `Err` is
/// Jira's 400 message.
pub(crate) fn parse(
    jql: &str,
    site: &Site,
    caller: usize,
    tz: &TimeZone,
    now: Timestamp,
) -> Result<Query, String> {
    let mut p = Parser {
        toks: tokenize(jql)?,
        pos: 0,
        site,
        now,
        caller,
    };
    let mut q = Query {
        filter: None,
        order: Vec::new(),
    };
    if !p.at_keyword("order") && p.peek().is_some() {
        q.filter = Some(p.or_expr(tz)?);
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
        return Err(expecting("either 'OR', 'AND' or 'ORDER BY'", Some(t)));
    }
    if q.filter.is_none() {
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

    /// A value: a word, a quoted string, or a function call written `name()` (unquoted).
    fn value(&mut self) -> Result<(String, bool), String> {
        match self.next() {
            Some((Tok::Word(w), _)) if matches!(self.peek(), Some((Tok::Open, _))) => {
                self.pos += 1;
                match self.next() {
                    Some((Tok::Close, _)) => Ok((format!("{w}()"), false)),
                    other => Err(expecting("')'", other.as_ref())),
                }
            }
            Some((Tok::Word(w), _)) => Ok((w, false)),
            Some((Tok::Quoted(w), _)) => Ok((w, true)),
            other => Err(expecting(
                "either a value, 'EMPTY' or a function",
                other.as_ref(),
            )),
        }
    }

    /// Conditions joined by `OR`.
    fn or_expr(&mut self, tz: &TimeZone) -> Result<Expr, String> {
        let mut any = vec![self.and_expr(tz)?];
        while self.at_keyword("or") {
            self.pos += 1;
            any.push(self.and_expr(tz)?);
        }
        Ok(if any.len() == 1 {
            any.remove(0)
        } else {
            Expr::Or(any)
        })
    }

    /// Conditions joined by `AND`, which binds tighter than `OR`.
    fn and_expr(&mut self, tz: &TimeZone) -> Result<Expr, String> {
        let mut all = vec![self.unary(tz)?];
        while self.at_keyword("and") {
            self.pos += 1;
            all.push(self.unary(tz)?);
        }
        Ok(if all.len() == 1 {
            all.remove(0)
        } else {
            Expr::And(all)
        })
    }

    /// `NOT` a condition, a parenthesized one, or a clause.
    fn unary(&mut self, tz: &TimeZone) -> Result<Expr, String> {
        if self.at_keyword("not") {
            self.pos += 1;
            return Ok(Expr::Not(Box::new(self.unary(tz)?)));
        }
        if matches!(self.peek(), Some((Tok::Open, _))) {
            self.pos += 1;
            let inner = self.or_expr(tz)?;
            return match self.next() {
                Some((Tok::Close, _)) => Ok(inner),
                other => Err(expecting("')'", other.as_ref())),
            };
        }
        self.clause(tz).map(Expr::Clause)
    }

    fn clause(&mut self, tz: &TimeZone) -> Result<Clause, String> {
        let field = match self.next() {
            Some((Tok::Word(w), _)) | Some((Tok::Quoted(w), _)) => w,
            other => return Err(expecting("a field name", other.as_ref())),
        };
        let attr = match field.to_ascii_lowercase().as_str() {
            "updated" | "updateddate" => return self.time(TimeField::Updated, &field, tz),
            "created" | "createddate" => return self.time(TimeField::Created, &field, tz),
            "project" => Attr::Project,
            "status" => Attr::Status,
            "issuetype" | "type" => Attr::IssueType,
            "priority" => Attr::Priority,
            "labels" => Attr::Labels,
            "assignee" => Attr::Assignee,
            "reporter" => Attr::Reporter,
            _ => {
                return Err(format!(
                    "Field '{field}' does not exist or you do not have permission to view it."
                ));
            }
        };
        self.equality(attr, &field)
    }

    /// The operator and values of an equality clause on `attr` (spelled `name`).
    fn equality(&mut self, attr: Attr, name: &str) -> Result<Clause, String> {
        let (negated, list, is) = match self.next() {
            Some((Tok::Op("="), _)) => (false, false, false),
            Some((Tok::Op("!="), _)) => (true, false, false),
            Some((Tok::Word(w), _)) if w.eq_ignore_ascii_case("in") => (false, true, false),
            Some((Tok::Word(w), _)) if w.eq_ignore_ascii_case("is") => {
                let not = self.at_keyword("not");
                self.pos += usize::from(not);
                (not, false, true)
            }
            Some((Tok::Word(w), _)) if w.eq_ignore_ascii_case("not") => {
                if !self.at_keyword("in") {
                    return Err(expecting("'IN'", self.peek()));
                }
                self.pos += 1;
                (true, true, false)
            }
            other => return Err(expecting("operator", other.as_ref())),
        };
        let mut raw = Vec::new();
        if list {
            if !matches!(self.next(), Some((Tok::Open, _))) {
                return Err(expecting("'('", self.toks.get(self.pos - 1)));
            }
            loop {
                raw.push(self.value()?);
                match self.next() {
                    Some((Tok::Comma, _)) => continue,
                    Some((Tok::Close, _)) => break,
                    other => return Err(expecting("')'", other.as_ref())),
                }
            }
        } else {
            raw.push(self.value()?);
        }
        let values = raw
            .into_iter()
            .map(|(text, quoted)| {
                let empty = !quoted
                    && (text.eq_ignore_ascii_case("empty") || text.eq_ignore_ascii_case("null"));
                match (empty, is) {
                    (true, _) => Ok(None),
                    (false, true) => Err(format!(
                        "The operator 'is' can only be used with the value 'EMPTY' (field '{name}')."
                    )),
                    (false, false) if !quoted && text.ends_with("()") => {
                        self.function(attr, &text).map(Some)
                    }
                    (false, false) => self.resolve(attr, name, &text).map(Some),
                }
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Clause::Is {
            attr,
            negated,
            values,
        })
    }

    /// A function's value: `currentUser()` for a person, nothing else.
    fn function(&self, attr: Attr, call: &str) -> Result<String, String> {
        let person = matches!(attr, Attr::Assignee | Attr::Reporter);
        if person && call.eq_ignore_ascii_case("currentUser()") {
            return Ok(self.site.users[self.caller].account_id.clone());
        }
        Err(format!("Unable to find JQL function '{call}'."))
    }

    /// A value of `attr` in its canonical form; `Err` is Jira's message for a value the site
    /// does not have.
    fn resolve(&self, attr: Attr, name: &str, text: &str) -> Result<String, String> {
        let missing = || format!("The value '{text}' does not exist for the field '{name}'.");
        let named = |list: &[(&str, &str)]| {
            list.iter()
                .find(|(n, id)| n.eq_ignore_ascii_case(text) || *id == text)
                .map(|(_, id)| (*id).to_owned())
                .ok_or_else(missing)
        };
        let site = self.site;
        match attr {
            Attr::Project => site
                .projects
                .iter()
                .position(|p| {
                    !p.restricted && (p.key.eq_ignore_ascii_case(text) || p.id.to_string() == text)
                })
                .map(|p| p.to_string())
                .ok_or_else(missing),
            Attr::Status => {
                let pairs: Vec<(&str, &str)> =
                    STATUSES.iter().map(|(n, id, _)| (*n, *id)).collect();
                named(&pairs)
            }
            Attr::IssueType => named(&ISSUE_TYPES),
            Attr::Priority => named(&PRIORITIES),
            Attr::Labels => Ok(text.to_owned()),
            Attr::Assignee | Attr::Reporter => site
                .users
                .iter()
                .find(|u| u.account_id == text || u.email().eq_ignore_ascii_case(text))
                .map(|u| u.account_id.clone())
                .ok_or_else(missing),
        }
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
    /// Whether `issue` of `site` matches the search's condition.
    pub(crate) fn matches(&self, site: &Site, issue: &Issue) -> bool {
        self.filter.as_ref().is_some_and(|e| e.matches(site, issue))
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

impl Expr {
    fn matches(&self, site: &Site, issue: &Issue) -> bool {
        match self {
            Expr::And(all) => all.iter().all(|e| e.matches(site, issue)),
            Expr::Or(any) => any.iter().any(|e| e.matches(site, issue)),
            Expr::Not(e) => !e.matches(site, issue),
            Expr::Clause(c) => c.matches(site, issue),
        }
    }
}

impl Clause {
    fn matches(&self, site: &Site, issue: &Issue) -> bool {
        match self {
            Clause::Is {
                attr,
                negated,
                values,
            } => {
                let have = attr_values(site, issue, *attr);
                let hit = values.iter().any(|v| match v {
                    None => have.is_empty(),
                    Some(v) => have.iter().any(|h| h.eq_ignore_ascii_case(v)),
                });
                // `!=` and `not in` never match an empty field, unless EMPTY is named.
                if *negated {
                    !hit && !have.is_empty()
                } else {
                    hit
                }
            }
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
        }
    }
}

/// An issue's values of `attr`, canonical as [`Parser::resolve`] writes them.
fn attr_values(site: &Site, issue: &Issue, attr: Attr) -> Vec<String> {
    let person = |u: Option<usize>| {
        u.map(|u| site.users[u].account_id.clone())
            .into_iter()
            .collect()
    };
    match attr {
        Attr::Project => vec![issue.project.to_string()],
        Attr::Status => vec![STATUSES[issue.status].1.to_owned()],
        Attr::IssueType => vec![ISSUE_TYPES[issue.issuetype].1.to_owned()],
        Attr::Priority => vec![PRIORITIES[issue.priority].1.to_owned()],
        Attr::Labels => issue.labels.iter().map(|l| (*l).to_owned()).collect(),
        Attr::Assignee => person(issue.assignee),
        Attr::Reporter => person(Some(issue.reporter)),
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
