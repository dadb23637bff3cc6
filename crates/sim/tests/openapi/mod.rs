//! GitHub's REST description (the vendored subset of `@octokit/openapi`) as a test oracle:
//! the operations it lists, and a JSON Schema validator for each operation's response.
//!
//! OpenAPI 3.0 schemas are not JSON Schema, so the validators are built from a rewritten copy:
//! `nullable: true` becomes a type union (`anyOf [.., null]` where there is no `type`),
//! `#/components/schemas/X` becomes `#/$defs/X`, a `oneOf` with a `discriminator` mapping also
//! requires the mapped schema for the discriminator's value (OpenAPI's meaning), and a `oneOf`
//! without one is read as `anyOf` (see [`convert`]).
//! The vendored file itself stays GitHub's text.
#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;

use serde_json::{Map, Value, json};

/// The vendored description, read at test time from the repository (never downloaded).
pub const SUBSET: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../schemas/github/rest-api.github.com.subset.json"
);

/// An operation: `("get", "/repos/{owner}/{repo}")`, spelled as the description does.
pub type Op = (String, String);

/// What the description says an operation answers with one status code.
#[derive(Debug)]
pub enum Declared {
    /// The status is not declared for the operation.
    Undeclared,
    /// Declared without an `application/json` body (204, 304, a 404 "if not merged").
    NoJsonBody,
    /// Declared with this (converted) schema.
    Json(Rc<jsonschema::Validator>),
}

/// The description, loaded once per test.
pub struct Description {
    doc: Value,
    defs: Value,
    /// Compiled validators by the schema's JSON text (compiling one takes milliseconds).
    compiled: RefCell<HashMap<String, Rc<jsonschema::Validator>>>,
    /// `date-time` also accepts an offset without its colon (`-0300`), as Jira writes it.
    offsets_without_colon: bool,
}

impl Description {
    /// Reads and converts the vendored subset.
    pub fn load() -> Description {
        Description::read(std::path::Path::new(SUBSET), false)
    }

    /// Reads and converts another OpenAPI 3.0 description, such as Atlassian's Jira
    /// descriptions, whose `date-time` Jira writes with a `±hhmm` offset
    /// (`2026-03-08T02:30:00.000-0300`): `date-time` accepts that form too.
    pub fn load_jira(path: &std::path::Path) -> Description {
        Description::read(path, true)
    }

    fn read(path: &std::path::Path, offsets_without_colon: bool) -> Description {
        let text = std::fs::read_to_string(path).expect("the REST description");
        let doc: Value = serde_json::from_str(&text).expect("the description is JSON");
        let schemas = doc["components"]["schemas"]
            .as_object()
            .expect("components.schemas");
        let defs: Map<String, Value> = schemas
            .iter()
            .map(|(k, v)| (k.clone(), convert(v)))
            .collect();
        Description {
            doc,
            defs: Value::Object(defs),
            compiled: RefCell::new(HashMap::new()),
            offsets_without_colon,
        }
    }

    /// The raw (unconverted) document.
    pub fn doc(&self) -> &Value {
        &self.doc
    }

    /// Every operation, sorted.
    pub fn operations(&self) -> Vec<Op> {
        let mut ops = Vec::new();
        for (path, item) in self.doc["paths"].as_object().expect("paths") {
            for method in item.as_object().expect("path item").keys() {
                if method != "parameters" {
                    ops.push((method.clone(), path.clone()));
                }
            }
        }
        ops.sort();
        ops
    }

    fn operation(&self, method: &str, path: &str) -> Option<&Value> {
        self.doc["paths"].get(path)?.get(method)
    }

    /// The response object declared for `status`, `$ref`s to `#/components/responses` followed.
    pub fn response(&self, method: &str, path: &str, status: u16) -> Option<&Value> {
        let r = self
            .operation(method, path)?
            .get("responses")?
            .get(status.to_string())?;
        match r.get("$ref").and_then(Value::as_str) {
            Some(reference) => self.resolve(reference),
            None => Some(r),
        }
    }

    /// Follows a local `#/...` reference in the raw document.
    pub fn resolve(&self, reference: &str) -> Option<&Value> {
        let pointer = reference.strip_prefix('#')?;
        self.doc.pointer(pointer)
    }

    /// What the operation declares for `status`.
    pub fn declared(&self, method: &str, path: &str, status: u16) -> Declared {
        let Some(response) = self.response(method, path, status) else {
            return Declared::Undeclared;
        };
        let Some(schema) = response
            .get("content")
            .and_then(|c| c.get("application/json"))
            .and_then(|c| c.get("schema"))
        else {
            return Declared::NoJsonBody;
        };
        Declared::Json(self.validator(schema))
    }

    /// The statuses an operation declares.
    pub fn statuses(&self, method: &str, path: &str) -> Vec<u16> {
        self.operation(method, path)
            .and_then(|o| o.get("responses"))
            .and_then(Value::as_object)
            .map(|r| r.keys().filter_map(|k| k.parse().ok()).collect())
            .unwrap_or_default()
    }

    /// A validator for one (raw) schema of the description.
    pub fn validator(&self, schema: &Value) -> Rc<jsonschema::Validator> {
        let key = schema.to_string();
        if let Some(v) = self.compiled.borrow().get(&key) {
            return Rc::clone(v);
        }
        let v = Rc::new(self.compile(schema));
        self.compiled.borrow_mut().insert(key, Rc::clone(&v));
        v
    }

    fn compile(&self, schema: &Value) -> jsonschema::Validator {
        let mut root = match convert(schema) {
            Value::Object(m) => m,
            other => {
                let mut m = Map::new();
                m.insert("allOf".into(), json!([other]));
                m
            }
        };
        root.insert(
            "$schema".into(),
            json!("https://json-schema.org/draft/2020-12/schema"),
        );
        root.insert("$defs".into(), self.defs.clone());
        let mut options = jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            // GitHub's `date-time`, `uri` and `email` are checked too; its own formats
            // (`int64`, `repo.nwo`, `timestamp`) are annotations.
            .should_validate_formats(true);
        if self.offsets_without_colon {
            options = options.with_format("date-time", iso_date_time);
        }
        options
            .build(&Value::Object(root))
            .expect("the converted description compiles")
    }

    /// The payload schema of an event type: GitHub's `event` does not tie `payload` to
    /// `type`, but each payload component is titled with its event type (`PushEvent`).
    pub fn event_payload(&self, event_type: &str) -> Option<Rc<jsonschema::Validator>> {
        let (name, _) =
            self.doc["components"]["schemas"]
                .as_object()?
                .iter()
                .find(|(name, s)| {
                    name.ends_with("-event")
                        && s.get("title").and_then(Value::as_str) == Some(event_type)
                })?;
        Some(self.validator(&json!({"$ref": format!("#/components/schemas/{name}")})))
    }

    /// Validates one envelope of `/events`: the `event` schema, and its payload against its
    /// type's payload schema.
    pub fn check_event(&self, envelope: &Value) -> Result<(), String> {
        let event = self.validator(&json!({"$ref": "#/components/schemas/event"}));
        let mut errors: Vec<String> = event
            .iter_errors(envelope)
            .map(|e| format!("at {:?}: {e}", e.instance_path().as_str()))
            .collect();
        if let Some(payload) = envelope
            .get("type")
            .and_then(Value::as_str)
            .and_then(|t| self.event_payload(t))
        {
            errors.extend(
                payload
                    .iter_errors(&envelope["payload"])
                    .map(|e| format!("at \"/payload{}\": {e}", e.instance_path().as_str())),
            );
        }
        if errors.is_empty() {
            Ok(())
        } else {
            Err(shorten(errors))
        }
    }

    /// The examples of an operation's response, by name, `$ref`s followed (an example object
    /// whose `value` is itself a `$ref` included).
    pub fn examples(&self, method: &str, path: &str, status: u16) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        let Some(examples) = self
            .response(method, path, status)
            .and_then(|r| r.get("content"))
            .and_then(|c| c.get("application/json"))
            .and_then(|c| c.get("examples"))
            .and_then(Value::as_object)
        else {
            return out;
        };
        for (name, example) in examples {
            let mut e = example;
            for _ in 0..4 {
                if let Some(r) = e.get("$ref").and_then(Value::as_str) {
                    e = self.resolve(r).expect("example reference resolves");
                } else if let Some(v) = e.get("value").filter(|v| v.get("$ref").is_some()) {
                    e = v;
                } else {
                    break;
                }
            }
            if let Some(v) = e.get("value") {
                out.insert(name.clone(), v.clone());
            }
        }
        out
    }

    /// Validates `body` against what the operation declares for `status`; `Err` says why in
    /// words, naming every failing instance path.
    pub fn check(&self, method: &str, path: &str, status: u16, body: &[u8]) -> Result<(), String> {
        match self.declared(method, path, status) {
            Declared::Undeclared => Err(format!(
                "status {status} is not declared (declared: {:?})",
                self.statuses(method, path)
            )),
            Declared::NoJsonBody => {
                if matches!(status, 204 | 304) && !body.is_empty() {
                    Err(format!(
                        "{status} must have no body, got {} bytes",
                        body.len()
                    ))
                } else {
                    Ok(())
                }
            }
            Declared::Json(validator) => {
                let value: Value = serde_json::from_slice(body)
                    .map_err(|e| format!("body is not JSON ({e}): {:.200}", lossy(body)))?;
                let errors: Vec<String> = validator
                    .iter_errors(&value)
                    .map(|e| format!("at {:?}: {e}", e.instance_path().as_str()))
                    .collect();
                if errors.is_empty() {
                    Ok(())
                } else {
                    Err(shorten(errors))
                }
            }
        }
    }
}

/// ISO 8601 date-time with an offset: `YYYY-MM-DDTHH:MM:SS`, optional fraction, then `Z`,
/// `±hh:mm` or `±hhmm`.
fn iso_date_time(s: &str) -> bool {
    let b = s.as_bytes();
    let digits =
        |r: std::ops::Range<usize>| b.get(r).is_some_and(|d| d.iter().all(u8::is_ascii_digit));
    let head = b.len() >= 19
        && digits(0..4)
        && b[4] == b'-'
        && digits(5..7)
        && b[7] == b'-'
        && digits(8..10)
        && matches!(b[10], b'T' | b't')
        && digits(11..13)
        && b[13] == b':'
        && digits(14..16)
        && b[16] == b':'
        && digits(17..19);
    if !head {
        return false;
    }
    let mut i = 19;
    if b.get(i) == Some(&b'.') {
        i += 1;
        let start = i;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        if i == start {
            return false;
        }
    }
    match &b[i..] {
        [b'Z' | b'z'] => true,
        [b'+' | b'-', h1, h2, b':', m1, m2] | [b'+' | b'-', h1, h2, m1, m2] => {
            [h1, h2, m1, m2].iter().all(|d| d.is_ascii_digit())
        }
        _ => false,
    }
}

fn lossy(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// Keeps a report readable: the first errors in full, a count of the rest.
fn shorten(errors: Vec<String>) -> String {
    let n = errors.len();
    let mut shown: Vec<String> = errors
        .into_iter()
        .take(12)
        .map(|e| {
            if e.len() > 400 {
                format!("{}…", e.chars().take(400).collect::<String>())
            } else {
                e
            }
        })
        .collect();
    if n > shown.len() {
        shown.push(format!("… and {} more", n - shown.len()));
    }
    shown.join("\n      ")
}

/// OpenAPI 3.0 schema → JSON Schema 2020-12 (see the module documentation). Only schema
/// positions are rewritten; `example`, `enum`, `default` and the like are data and stay as
/// they are.
pub fn convert(node: &Value) -> Value {
    let Value::Object(m) = node else {
        return node.clone();
    };
    let mut out = Map::new();
    for (k, v) in m {
        let converted = match k.as_str() {
            "$ref" => {
                let r = v.as_str().unwrap_or_default();
                Value::String(
                    r.strip_prefix("#/components/schemas/")
                        .map_or_else(|| r.to_owned(), |name| format!("#/$defs/{name}")),
                )
            }
            "properties" | "patternProperties" => match v {
                Value::Object(props) => Value::Object(
                    props
                        .iter()
                        .map(|(name, s)| (name.clone(), convert(s)))
                        .collect(),
                ),
                other => other.clone(),
            },
            "items" | "additionalProperties" | "not" => convert(v),
            "allOf" | "anyOf" | "oneOf" => match v {
                Value::Array(list) => Value::Array(list.iter().map(convert).collect()),
                other => other.clone(),
            },
            _ => v.clone(),
        };
        out.insert(k.clone(), converted);
    }
    // A `oneOf` without a discriminator is GitHub's "one of these shapes", not JSON Schema's
    // "exactly one": its alternatives overlap (GitHub's own `/events` example is a push
    // payload that several event payload schemas accept, and `basic-error` accepts whatever
    // `repository-rule-violation-error` does), so it is read as `anyOf`.
    if !out.contains_key("discriminator")
        && let Some(alternatives) = out.remove("oneOf")
    {
        out.insert("anyOf".into(), alternatives);
    }
    discriminate(&mut out);
    if out.remove("nullable") == Some(Value::Bool(true)) {
        nullable(out)
    } else {
        Value::Object(out)
    }
}

fn nullable(mut m: Map<String, Value>) -> Value {
    if m.contains_key("$ref") {
        // A `$ref` has no siblings in OpenAPI 3.0: the null alternative goes beside it.
        return json!({"anyOf": [Value::Object(m), {"type": "null"}]});
    }
    match m.get("type").cloned() {
        Some(Value::String(t)) => {
            m.insert("type".into(), json!([t, "null"]));
            if let Some(Value::Array(values)) = m.get_mut("enum")
                && !values.contains(&Value::Null)
            {
                values.push(Value::Null);
            }
            Value::Object(m)
        }
        _ => json!({"anyOf": [Value::Object(m), {"type": "null"}]}),
    }
}

/// `discriminator.mapping` → "if the property says V, the mapped schema applies".
fn discriminate(m: &mut Map<String, Value>) {
    let Some(d) = m.get("discriminator") else {
        return;
    };
    let Some(property) = d.get("propertyName").and_then(Value::as_str) else {
        return;
    };
    let Some(mapping) = d.get("mapping").and_then(Value::as_object) else {
        return;
    };
    let rules: Vec<Value> = mapping
        .iter()
        .filter_map(|(value, target)| {
            let name = target.as_str()?.strip_prefix("#/components/schemas/")?;
            Some(json!({
                "if": {"properties": {property: {"const": value}}, "required": [property]},
                "then": {"$ref": format!("#/$defs/{name}")},
            }))
        })
        .collect();
    if let Some(Value::Array(all)) = m.get_mut("allOf") {
        all.extend(rules);
    } else if !rules.is_empty() {
        m.insert("allOf".into(), Value::Array(rules));
    }
}
