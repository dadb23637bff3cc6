//! The JSON log line: one object per line on stderr (stdout carries the operator summary).
//!
//! Four fields lead every line and belong to this formatter, not to the event: `timestamp`
//! (UTC, milliseconds, from the system clock), `level`, `service` ("headroom") and `event` (the
//! event's own `event` field, else its target). An event or span field with one of those names
//! cannot spoof them: it is kept, renamed `field.NAME`. Span fields — the `run_id` of an
//! ingestion run, enrichment cycle or reconciler sweep — are merged at the top level beside the
//! event's fields, innermost span first in precedence, the event's own fields above all.
//!
//! While progress bars are drawn on the terminal ([`lines_above`]), each line is written with
//! the bars cleared and redrawn under it, so that a warning never breaks them.

use std::fmt::Debug;
use std::io::Write;

use headroom_core::clock::{Clock, SystemClock};
use headroom_core::redact::redact;
use serde_json::{Map, Value};
use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber, span};
use tracing_subscriber::Layer;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

/// The `service` every line carries.
pub const SERVICE: &str = "headroom";

/// The progress bars drawn on stderr now, if any.
static BARS: std::sync::Mutex<Option<indicatif::MultiProgress>> = std::sync::Mutex::new(None);

/// Log lines go above `bars` from now on (cleared, the line written, redrawn); `None` when
/// the bars are gone.
pub fn lines_above(bars: Option<indicatif::MultiProgress>) {
    *BARS.lock().unwrap_or_else(|p| p.into_inner()) = bars;
}

/// Names only the formatter writes.
const OWNED: [&str; 4] = ["timestamp", "level", "service", "event"];

/// Recorded fields, in the order they were recorded.
#[derive(Debug, Default)]
struct Fields(Vec<(String, Value)>);

impl Fields {
    /// Keeps a field; text is redacted here, whatever emitted it (a dependency's trace event
    /// may quote a connection string), so no credential reaches a log line.
    fn put(&mut self, field: &Field, value: Value) {
        let value = match value {
            Value::String(text) => Value::String(redact(&text)),
            other => other,
        };
        let name = field.name();
        match self.0.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value,
            None => self.0.push((name.to_owned(), value)),
        }
    }
}

/// Whether a field or parameter name says its value is a secret.
fn names_a_secret(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    [
        "password",
        "passwd",
        "pwd",
        "token",
        "secret",
        "api_key",
        "authorization",
    ]
    .iter()
    .any(|s| name.contains(s))
}

impl Fields {
    /// Masks what the names say is secret: a field named like one (`password`), and the
    /// `value` beside a `key` naming one — how sqlx reports a connect parameter it ignores.
    fn mask_secrets(&mut self) {
        let keyed_secret = self
            .0
            .iter()
            .any(|(k, v)| k == "key" && v.as_str().is_some_and(names_a_secret));
        for (name, value) in &mut self.0 {
            if names_a_secret(name) || (keyed_secret && name == "value") {
                *value = Value::String(headroom_core::redact::MARKER.to_owned());
            }
        }
    }
}

impl Visit for Fields {
    fn record_debug(&mut self, field: &Field, value: &dyn Debug) {
        self.put(field, Value::String(format!("{value:?}")));
    }
    fn record_str(&mut self, field: &Field, value: &str) {
        self.put(field, Value::String(value.to_owned()));
    }
    fn record_i64(&mut self, field: &Field, value: i64) {
        self.put(field, Value::from(value));
    }
    fn record_u64(&mut self, field: &Field, value: u64) {
        self.put(field, Value::from(value));
    }
    fn record_f64(&mut self, field: &Field, value: f64) {
        self.put(field, Value::from(value));
    }
    fn record_bool(&mut self, field: &Field, value: bool) {
        self.put(field, Value::from(value));
    }
    fn record_error(&mut self, field: &Field, value: &(dyn std::error::Error + 'static)) {
        self.put(field, Value::String(value.to_string()));
    }
}

/// The layer that writes the lines.
#[derive(Debug)]
pub struct JsonLines<W> {
    make_writer: W,
}

impl<W> JsonLines<W> {
    /// Lines go to whatever `make_writer` makes (stderr in the binary).
    pub fn new(make_writer: W) -> Self {
        Self { make_writer }
    }
}

/// Builds the line of one event from its fields and its spans' fields (outermost first).
fn line(
    timestamp: &str,
    level: &tracing::Level,
    target: &str,
    spans: &[Vec<(String, Value)>],
    own: Vec<(String, Value)>,
) -> String {
    let mut rest: Map<String, Value> = Map::new();
    let mut order: Vec<String> = Vec::new();
    let event_name;
    // Outermost span first, the event's own fields last: later values win.
    for (k, v) in spans.iter().flatten().cloned().chain(own) {
        if !rest.contains_key(&k) {
            order.push(k.clone());
        }
        rest.insert(k, v);
    }
    match rest.remove("event") {
        Some(Value::String(name)) => event_name = Some(name),
        Some(other) => {
            // A non-string `event` cannot name the line; keep it as data.
            event_name = None;
            rest.insert("field.event".into(), other);
            order.push("field.event".into());
        }
        None => event_name = None,
    }
    let mut out = Map::new();
    out.insert("timestamp".into(), Value::from(timestamp));
    out.insert(
        "level".into(),
        Value::from(level.as_str().to_ascii_lowercase()),
    );
    out.insert("service".into(), Value::from(SERVICE));
    out.insert(
        "event".into(),
        Value::from(event_name.unwrap_or_else(|| target.to_owned())),
    );
    let mut text = String::from("{");
    let mut first = true;
    let mut push = |k: &str, v: &Value| {
        if !first {
            text.push(',');
        }
        first = false;
        text.push_str(&Value::from(k).to_string());
        text.push(':');
        text.push_str(&v.to_string());
    };
    for k in OWNED {
        if let Some(v) = out.get(k) {
            push(k, v);
        }
    }
    for k in order {
        let Some(v) = rest.get(&k) else { continue };
        if OWNED.contains(&k.as_str()) {
            push(&format!("field.{k}"), v);
        } else {
            push(&k, v);
        }
    }
    text.push('}');
    text
}

impl<S, W> Layer<S> for JsonLines<W>
where
    S: Subscriber + for<'a> LookupSpan<'a>,
    W: for<'w> MakeWriter<'w> + 'static,
{
    fn on_new_span(&self, attrs: &span::Attributes<'_>, id: &span::Id, ctx: Context<'_, S>) {
        let mut fields = Fields::default();
        attrs.record(&mut fields);
        if let Some(span) = ctx.span(id) {
            span.extensions_mut().insert(fields);
        }
    }

    fn on_record(&self, id: &span::Id, values: &span::Record<'_>, ctx: Context<'_, S>) {
        if let Some(span) = ctx.span(id) {
            let mut ext = span.extensions_mut();
            if let Some(fields) = ext.get_mut::<Fields>() {
                values.record(fields);
            }
        }
    }

    fn on_event(&self, event: &Event<'_>, ctx: Context<'_, S>) {
        let mut own = Fields::default();
        event.record(&mut own);
        own.mask_secrets();
        let spans: Vec<Vec<(String, Value)>> = ctx
            .event_scope(event)
            .map(|scope| {
                scope
                    .from_root()
                    .filter_map(|span| span.extensions().get::<Fields>().map(|f| f.0.clone()))
                    .collect()
            })
            .unwrap_or_default();
        let now = SystemClock.now();
        let text = line(
            &format!("{now:.3}"),
            event.metadata().level(),
            event.metadata().target(),
            &spans,
            own.0,
        );
        let write = || {
            let mut writer = self.make_writer.make_writer();
            // A log line that cannot be written is dropped: logging must never stop the work.
            let _ = writer.write_all(format!("{text}\n").as_bytes());
        };
        let bars = BARS.lock().ok().and_then(|b| b.clone());
        match bars {
            Some(bars) => bars.suspend(write),
            None => write(),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use tracing_subscriber::layer::SubscriberExt as _;

    use super::*;

    #[derive(Clone, Default)]
    struct Buffer(Arc<Mutex<Vec<u8>>>);

    impl Write for Buffer {
        fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
            self.0
                .lock()
                .map_err(|_| std::io::Error::other("poisoned"))?
                .extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }

    impl<'a> MakeWriter<'a> for Buffer {
        type Writer = Buffer;
        fn make_writer(&'a self) -> Self::Writer {
            self.clone()
        }
    }

    fn capture(work: impl FnOnce()) -> Vec<Value> {
        let buffer = Buffer::default();
        let subscriber = tracing_subscriber::registry().with(JsonLines::new(buffer.clone()));
        tracing::subscriber::with_default(subscriber, work);
        let bytes = buffer.0.lock().map(|b| b.clone()).unwrap_or_default();
        String::from_utf8(bytes)
            .unwrap_or_default()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap_or(Value::Null))
            .collect()
    }

    /// A credential in any field or message — ours or a dependency's — is masked in the
    /// line: a database URL's password, a token.
    #[test]
    fn credentials_never_reach_a_line() {
        let lines = capture(|| {
            tracing::trace!(
                target: "sqlx::postgres",
                url = "postgres://alice:SEC@RETPW@127.0.0.1:1/db?password=SECRETPW",
                "connecting to postgres://bob:hunter2@db/x"
            );
            tracing::warn!(error = %"Bearer ghp_abcdefghijklmnopqrstuvwxyz0123", "failed");
            tracing::warn!(
                key = "sslpassword",
                value = "SECRETPW",
                "ignoring a parameter"
            );
        });
        assert_eq!(lines.len(), 3);
        let text = lines.iter().map(|l| l.to_string()).collect::<String>();
        for secret in ["SEC", "RETPW", "SECRETPW", "hunter2", "ghp_abc"] {
            assert!(!text.contains(secret), "{secret} in {text}");
        }
        assert!(text.contains("[REDACTED]"), "{text}");
    }

    #[test]
    fn payload_fields_cannot_override_the_owned_ones() {
        let lines = capture(|| {
            tracing::info!(
                event = "budget.window_initialized",
                service = "spoofed",
                level = "error",
                timestamp = "1970-01-01T00:00:00Z",
                limit = 60u64
            );
        });
        assert_eq!(lines.len(), 1);
        let l = &lines[0];
        assert_eq!(l["service"], "headroom");
        assert_eq!(l["level"], "info");
        assert_eq!(l["event"], "budget.window_initialized");
        assert_ne!(l["timestamp"], "1970-01-01T00:00:00Z");
        assert!(
            l["timestamp"].as_str().is_some_and(|t| t.ends_with('Z')),
            "{l}"
        );
        // Kept as data, under a name that cannot collide.
        assert_eq!(l["field.service"], "spoofed");
        assert_eq!(l["field.level"], "error");
        // Event fields sit at the top level, not under "fields".
        assert_eq!(l["limit"], 60);
        assert!(l.get("fields").is_none());
    }

    #[test]
    fn span_fields_reach_every_line_and_the_raw_text_has_no_duplicate_keys() {
        let lines = capture(|| {
            let span = tracing::info_span!("ingestion_run", run_id = "r-1", service = "nope");
            let _g = span.enter();
            tracing::warn!(event = "github.request", status = 500u64);
            tracing::info!("no event field");
            let inner = tracing::info_span!("inner", depth = 2u64);
            let _i = inner.enter();
            tracing::info!(event = "x", run_id = "event-wins");
        });
        assert_eq!(lines.len(), 3);
        assert_eq!(lines[0]["run_id"], "r-1");
        assert_eq!(lines[0]["service"], "headroom");
        assert_eq!(lines[0]["level"], "warn");
        assert_eq!(lines[1]["run_id"], "r-1");
        // Without an `event` field, the target names the line.
        assert_eq!(lines[1]["event"], module_path!());
        assert_eq!(lines[1]["message"], "no event field");
        assert_eq!(lines[2]["depth"], 2);
        assert_eq!(lines[2]["run_id"], "event-wins");
        // Each key once: serde keeps the last duplicate, so check the text itself.
        let raw = line(
            "t",
            &tracing::Level::INFO,
            "target",
            &[vec![("service".into(), Value::from("a"))]],
            vec![
                ("event".into(), Value::from("e")),
                ("service".into(), Value::from("b")),
            ],
        );
        assert_eq!(raw.matches("\"service\"").count(), 1, "{raw}");
        assert!(
            raw.starts_with(
                "{\"timestamp\":\"t\",\"level\":\"info\",\"service\":\"headroom\",\"event\":\"e\""
            ),
            "{raw}"
        );
    }
}
