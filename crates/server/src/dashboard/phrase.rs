//! Words with instants in them, said two ways from one source: plain text with UTC clock
//! times (the JSON API's `wait` and `why`), and HTML whose `<time>` elements the page's script
//! keeps in the reader's time zone and counting down every second. An instant that passes
//! switches to its past wording ("reset 15:57 — awaiting the new window's first response"),
//! on the server and, without a reload, in the browser: never "(in now)".

use std::fmt::Write as _;

use headroom_core::clock::Timestamp;

use super::render::escape;
use super::words;

/// How an instant reads ahead of it and once past.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct When {
    /// The instant.
    pub at: Timestamp,
    /// Before it: "reopens" → "reopens 15:57 UTC (in 1 min)".
    pub ahead: &'static str,
    /// After it: "reset" → "reset 15:57 UTC".
    pub past: &'static str,
    /// Said after the past clock time.
    pub past_tail: &'static str,
}

/// What a window's end awaits once it passed and no reading of the new one came.
pub const AWAITING: &str = " — awaiting the new window's first response";

impl When {
    /// A window that reopens (or reset).
    pub fn reopens(at: Timestamp) -> Self {
        Self {
            at,
            ahead: "reopens",
            past: "reset",
            past_tail: AWAITING,
        }
    }

    /// A window's reset in the figures line.
    pub fn resets(at: Timestamp) -> Self {
        Self {
            ahead: "resets",
            ..Self::reopens(at)
        }
    }

    /// A run's wake time.
    pub fn wake(at: Timestamp) -> Self {
        Self {
            at,
            ahead: "at",
            past: "due since",
            past_tail: "",
        }
    }

    /// The end of a secondary block.
    pub fn retry(at: Timestamp) -> Self {
        Self {
            at,
            ahead: "retry at",
            past: "block ended",
            past_tail: "",
        }
    }

    fn plain(&self, now: Timestamp) -> String {
        if self.at > now {
            format!(
                "{} {} (in {})",
                self.ahead,
                words::clock_time(self.at),
                words::countdown(now, self.at)
            )
        } else {
            format!(
                "{} {}{}",
                self.past,
                words::clock_time(self.at),
                self.past_tail
            )
        }
    }

    /// Ahead of the instant, both wordings, the past one hidden (the script swaps them when
    /// the instant passes); past it, the past one only.
    fn html(&self, now: Timestamp) -> String {
        let t = self.at;
        let clock = format!(
            "<time class=\"clock\" datetime=\"{t}\">{}</time>",
            words::clock_time(t)
        );
        let ahead = if t > now {
            format!(
                "<span class=\"ahead\">{} {clock} (in <time class=\"countdown\" \
                 datetime=\"{t}\">{}</time>)</span>",
                escape(self.ahead),
                words::countdown(now, t),
            )
        } else {
            String::new()
        };
        format!(
            "<span class=\"when\" data-at=\"{t}\">{ahead}<span class=\"past\"{}>{} \
             {clock}{}</span></span>",
            if t > now { " hidden" } else { "" },
            escape(self.past),
            escape(self.past_tail),
        )
    }
}

/// One part of a phrase.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// Words.
    Text(String),
    /// An instant.
    When(When),
}

/// Words with instants in them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Phrase(pub Vec<Piece>);

impl Phrase {
    /// A phrase of words only.
    pub fn text(words: impl Into<String>) -> Self {
        Self(vec![Piece::Text(words.into())])
    }

    /// Adds words.
    pub fn push(&mut self, words: impl Into<String>) -> &mut Self {
        self.0.push(Piece::Text(words.into()));
        self
    }

    /// Adds an instant.
    pub fn when(&mut self, when: When) -> &mut Self {
        self.0.push(Piece::When(when));
        self
    }

    /// Adds another phrase.
    pub fn append(&mut self, other: Phrase) -> &mut Self {
        self.0.extend(other.0);
        self
    }

    /// Whether it says nothing.
    pub fn is_empty(&self) -> bool {
        self.0
            .iter()
            .all(|p| matches!(p, Piece::Text(t) if t.is_empty()))
    }

    /// Plain text, clock times in UTC.
    pub fn plain(&self, now: Timestamp) -> String {
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => out.push_str(t),
                Piece::When(w) => out.push_str(&w.plain(now)),
            }
        }
        out
    }

    /// HTML, escaped, with live `<time>` elements.
    pub fn html(&self, now: Timestamp) -> String {
        let mut out = String::new();
        for piece in &self.0 {
            match piece {
                Piece::Text(t) => out.push_str(&escape(t)),
                Piece::When(w) => {
                    let _ = write!(out, "{}", w.html(now));
                }
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(secs: i64) -> Timestamp {
        // 15:56:00 UTC.
        Timestamp::from_second(1_800_000_000 - 1_800_000_000 % 86_400 + 15 * 3600 + 56 * 60 + secs)
            .expect("valid")
    }

    #[test]
    fn a_reset_already_past_reads_as_past_never_in_now() {
        let mut p = Phrase::text("REST ");
        p.when(When::reopens(t(60)));
        assert_eq!(p.plain(t(0)), "REST reopens 15:57 UTC (in 1 min)");
        assert_eq!(
            p.plain(t(61)),
            "REST reset 15:57 UTC — awaiting the new window's first response"
        );
        assert!(!p.plain(t(60)).contains("in now"));
        let html = p.html(t(61));
        assert!(
            !html.contains("class=\"ahead\"") && !html.contains("countdown"),
            "no countdown once past: {html}"
        );
        assert!(html.contains("<span class=\"past\">reset <time class=\"clock\""));
    }

    #[test]
    fn a_countdown_in_words_is_a_live_time_element() {
        let mut p = Phrase::text("x ");
        p.when(When::wake(t(120)));
        let html = p.html(t(0));
        let at = t(120);
        assert!(html.contains(&format!(
            "(in <time class=\"countdown\" datetime=\"{at}\">2 min</time>)"
        )));
        assert!(html.contains(&format!("<span class=\"when\" data-at=\"{at}\">")));
        assert!(html.contains("<span class=\"past\" hidden>due since"));
    }
}
