//! Envelope validation: every envelope is judged before any transaction opens.
//!
//! A PushEvent is accepted in either payload shape GitHub has used — the one before October
//! 2025 (`commits`, `size`, `distinct_size`) and the current one (`repository_id`, `push_id`,
//! `ref`, `head`, `before` only) — and neither `commits` nor `size` is required. Other event
//! types are counted and ignored. Anything else is quarantined with a classification and a
//! message that says what was wrong.

use headroom_core::clock::Timestamp;
use headroom_store::{ActorRef, RepositoryRef};
use serde_json::{Map, Value};

/// Why an envelope was quarantined. The stored code is [`ErrorCode::as_str`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ErrorCode {
    /// The line is not JSON.
    InvalidJson,
    /// The JSON is not an object.
    NotAnObject,
    /// A required field is absent (or null).
    MissingField,
    /// A field has the wrong JSON type.
    InvalidFieldType,
    /// A field has the right type but an impossible value.
    InvalidFieldFormat,
    /// Two fields that name the same thing disagree (`payload.repository_id` vs `repo.id`).
    InconsistentIdentity,
}

impl ErrorCode {
    /// The stored classification.
    pub fn as_str(&self) -> &'static str {
        match self {
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::NotAnObject => "not_an_object",
            ErrorCode::MissingField => "missing_field",
            ErrorCode::InvalidFieldType => "invalid_field_type",
            ErrorCode::InvalidFieldFormat => "invalid_field_format",
            ErrorCode::InconsistentIdentity => "inconsistent_identity",
        }
    }
}

/// What is wrong with one envelope.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Rejection {
    /// The classification.
    pub code: ErrorCode,
    /// What was wrong, in words, naming the field.
    pub message: String,
}

/// A validated PushEvent, as typed columns.
#[derive(Debug, Clone, PartialEq)]
pub struct ValidPush {
    /// GitHub's event id.
    pub github_event_id: String,
    /// `payload.push_id`.
    pub github_push_id: Option<i64>,
    /// The actor.
    pub actor: ActorRef,
    /// The repository.
    pub repository: RepositoryRef,
    /// `payload.ref`.
    pub git_ref: String,
    /// `payload.head`.
    pub head_sha: String,
    /// `payload.before`: absent from PushEvents of 2012 and earlier.
    pub before_sha: Option<String>,
    /// `payload.size` (older shape only).
    pub commit_count: Option<i64>,
    /// `payload.distinct_size` (older shape only).
    pub distinct_commit_count: Option<i64>,
    /// `created_at`.
    pub occurred_at: Timestamp,
}

/// The verdict on one envelope.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// A well-formed PushEvent.
    Push(Box<ValidPush>),
    /// Another event type: counted and ignored.
    Ignored {
        /// Its `type`.
        event_type: String,
    },
    /// Malformed: quarantine it.
    Quarantine(Rejection),
}

/// The envelope's id and type as far as they can be read, for quarantine rows and logs.
pub fn identity_hints(envelope: &Value) -> (Option<String>, Option<String>) {
    let id = match envelope.get("id") {
        Some(Value::String(s)) => Some(truncate(s, 64)),
        Some(Value::Number(n)) => Some(n.to_string()),
        _ => None,
    };
    let event_type = envelope
        .get("type")
        .and_then(Value::as_str)
        .map(|s| truncate(s, 64));
    (id, event_type)
}

/// The earliest `created_at` accepted: GitHub opened in 2008.
const EARLIEST_EVENT: Timestamp = Timestamp::constant(1_199_145_600, 0);
/// The first `created_at` refused as too late: 2100-01-01.
const LATEST_EVENT: Timestamp = Timestamp::constant(4_102_444_800, 0);

/// Judges one envelope.
pub fn validate(envelope: &Value) -> Verdict {
    match validate_inner(envelope) {
        Ok(verdict) => verdict,
        Err(rejection) => Verdict::Quarantine(rejection),
    }
}

type Check<T> = Result<T, Rejection>;

fn reject<T>(code: ErrorCode, message: String) -> Check<T> {
    Err(Rejection { code, message })
}

/// `created_at`: an RFC 3339 instant within the years GitHub's events can have.
fn created_at(root: &serde_json::Map<String, Value>) -> Check<Timestamp> {
    let created_at = string(root, "", "created_at")?;
    match created_at.parse::<Timestamp>() {
        // GitHub's events begin with GitHub (2008); an instant past 2100 is no event's, and
        // stored it would sort as the newest row forever.
        Ok(t) if (EARLIEST_EVENT..LATEST_EVENT).contains(&t) => Ok(t),
        Ok(_) => reject(
            ErrorCode::InvalidFieldFormat,
            format!(
                "created_at is {}, outside the years GitHub's events can have (2008 to 2099)",
                quoted(created_at)
            ),
        ),
        Err(_) => reject(
            ErrorCode::InvalidFieldFormat,
            format!(
                "created_at is {}, not an RFC 3339 instant",
                quoted(created_at)
            ),
        ),
    }
}

fn validate_inner(envelope: &Value) -> Check<Verdict> {
    let Some(root) = envelope.as_object() else {
        return reject(
            ErrorCode::NotAnObject,
            format!("the envelope is {}, not an object", kind(envelope)),
        );
    };
    let event_type = string(root, "", "type")?;
    if event_type.is_empty() {
        return reject(ErrorCode::InvalidFieldFormat, "type is empty".into());
    }
    if event_type != "PushEvent" {
        return Ok(Verdict::Ignored {
            event_type: truncate(event_type, 64),
        });
    }
    let id = event_id(root)?;
    let occurred_at = created_at(root)?;

    let actor = object(root, "", "actor")?;
    let actor_id = positive_id(actor, "actor.", "id")?;
    let login = non_empty(actor, "actor.", "login")?;
    if !super::shape::is_login(login) {
        return reject(
            ErrorCode::InvalidFieldFormat,
            format!("actor.login is {}, not a GitHub login", quoted(login)),
        );
    }
    let actor = ActorRef {
        github_id: actor_id,
        login: login.to_owned(),
        display_login: optional_string(actor, "actor.", "display_login")?.map(str::to_owned),
        url: optional_string(actor, "actor.", "url")?.map(str::to_owned),
        avatar_url: optional_string(actor, "actor.", "avatar_url")?.map(str::to_owned),
    };

    let repo = object(root, "", "repo")?;
    let repo_id = positive_id(repo, "repo.", "id")?;
    let full_name = non_empty(repo, "repo.", "name")?;
    match full_name.split_once('/') {
        Some(_) if super::shape::is_full_name(full_name) => {}
        _ => {
            return reject(
                ErrorCode::InvalidFieldFormat,
                format!("repo.name is {}, not owner/name", quoted(full_name)),
            );
        }
    }
    let repository = RepositoryRef {
        github_id: repo_id,
        full_name: full_name.to_owned(),
        url: optional_string(repo, "repo.", "url")?.map(str::to_owned),
    };

    let payload = object(root, "", "payload")?;
    let git_ref = non_empty(payload, "payload.", "ref")?;
    let head = object_name(payload, "head")?;
    // GitHub's oldest PushEvents (2012) have no `before`; when present it must be a name.
    let before = match payload.get("before") {
        None | Some(Value::Null) => None,
        Some(_) => Some(object_name(payload, "before")?),
    };
    let github_push_id = optional_integer(payload, "payload.", "push_id")?;
    if let Some(push_id) = github_push_id.filter(|n| *n <= 0) {
        return reject(
            ErrorCode::InvalidFieldFormat,
            format!("payload.push_id is {push_id}, not a positive id"),
        );
    }
    let commit_count = optional_count(payload, "size")?;
    let distinct_commit_count = optional_count(payload, "distinct_size")?;
    if let Some(commits) = payload.get("commits")
        && !commits.is_null()
        && !commits.is_array()
    {
        return reject(
            ErrorCode::InvalidFieldType,
            format!("payload.commits is {}, not an array", kind(commits)),
        );
    }
    if let Some(repository_id) = optional_integer(payload, "payload.", "repository_id")?
        && repository_id != repo_id
    {
        return reject(
            ErrorCode::InconsistentIdentity,
            format!("payload.repository_id is {repository_id} but repo.id is {repo_id}"),
        );
    }

    Ok(Verdict::Push(Box::new(ValidPush {
        github_event_id: id.to_owned(),
        github_push_id,
        actor,
        repository,
        git_ref: git_ref.to_owned(),
        head_sha: head.to_owned(),
        before_sha: before.map(str::to_owned),
        commit_count,
        distinct_commit_count,
        occurred_at,
    })))
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn truncate(s: &str, max_chars: usize) -> String {
    if s.chars().count() <= max_chars {
        s.to_owned()
    } else {
        let mut out: String = s.chars().take(max_chars).collect();
        out.push('…');
        out
    }
}

fn quoted(s: &str) -> String {
    serde_json::to_string(&truncate(s, 100)).unwrap_or_else(|_| String::from("\"?\""))
}

fn present<'a>(map: &'a Map<String, Value>, prefix: &str, field: &str) -> Check<&'a Value> {
    match map.get(field) {
        None | Some(Value::Null) => reject(
            ErrorCode::MissingField,
            format!("{prefix}{field} is missing"),
        ),
        Some(value) => Ok(value),
    }
}

fn string<'a>(map: &'a Map<String, Value>, prefix: &str, field: &str) -> Check<&'a str> {
    let value = present(map, prefix, field)?;
    value.as_str().map_or_else(
        || {
            reject(
                ErrorCode::InvalidFieldType,
                format!("{prefix}{field} is {}, not a string", kind(value)),
            )
        },
        Ok,
    )
}

fn non_empty<'a>(map: &'a Map<String, Value>, prefix: &str, field: &str) -> Check<&'a str> {
    let s = string(map, prefix, field)?;
    if s.trim().is_empty() {
        return reject(
            ErrorCode::InvalidFieldFormat,
            format!("{prefix}{field} is empty"),
        );
    }
    Ok(s)
}

fn optional_string<'a>(
    map: &'a Map<String, Value>,
    prefix: &str,
    field: &str,
) -> Check<Option<&'a str>> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.as_str())),
        Some(other) => reject(
            ErrorCode::InvalidFieldType,
            format!("{prefix}{field} is {}, not a string", kind(other)),
        ),
    }
}

fn object<'a>(
    map: &'a Map<String, Value>,
    prefix: &str,
    field: &str,
) -> Check<&'a Map<String, Value>> {
    let value = present(map, prefix, field)?;
    value.as_object().map_or_else(
        || {
            reject(
                ErrorCode::InvalidFieldType,
                format!("{prefix}{field} is {}, not an object", kind(value)),
            )
        },
        Ok,
    )
}

/// The envelope's `id`: canonical decimal only, so "0123" and "123" are never stored as two
/// events.
fn event_id(root: &Map<String, Value>) -> Check<&str> {
    let id = string(root, "", "id")?;
    if id.is_empty()
        || id.len() > 32
        || !id.bytes().all(|b| b.is_ascii_digit())
        || (id.len() > 1 && id.starts_with('0'))
    {
        return reject(
            ErrorCode::InvalidFieldFormat,
            format!("id is {}, not a decimal event id", quoted(id)),
        );
    }
    Ok(id)
}

fn positive_id(map: &Map<String, Value>, prefix: &str, field: &str) -> Check<i64> {
    let value = present(map, prefix, field)?;
    match value.as_i64() {
        Some(id) if id > 0 => Ok(id),
        Some(id) => reject(
            ErrorCode::InvalidFieldFormat,
            format!("{prefix}{field} is {id}, not a positive id"),
        ),
        None => reject(
            ErrorCode::InvalidFieldType,
            format!("{prefix}{field} is {}, not an integer", kind(value)),
        ),
    }
}

fn optional_integer(map: &Map<String, Value>, prefix: &str, field: &str) -> Check<Option<i64>> {
    match map.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(value) => match value.as_i64() {
            Some(n) => Ok(Some(n)),
            None => reject(
                ErrorCode::InvalidFieldType,
                format!("{prefix}{field} is {}, not an integer", kind(value)),
            ),
        },
    }
}

fn optional_count(payload: &Map<String, Value>, field: &str) -> Check<Option<i64>> {
    match optional_integer(payload, "payload.", field)? {
        Some(n) if n < 0 => reject(
            ErrorCode::InvalidFieldFormat,
            format!("payload.{field} is {n}, not a count"),
        ),
        other => Ok(other),
    }
}

/// A git object name: 40 (SHA-1) or 64 (SHA-256) hexadecimal characters.
fn object_name<'a>(payload: &'a Map<String, Value>, field: &str) -> Check<&'a str> {
    let s = string(payload, "payload.", field)?;
    if (s.len() == 40 || s.len() == 64) && s.bytes().all(|b| b.is_ascii_hexdigit()) {
        Ok(s)
    } else {
        reject(
            ErrorCode::InvalidFieldFormat,
            format!(
                "payload.{field} is {}, not 40 or 64 hexadecimal characters",
                quoted(s)
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const HEAD: &str = "961e9b9be3607af7772e80181227fef92cf67076";
    const BEFORE: &str = "8475abe0ec483ea5c0697e2ab9a3dd595fa3f3df";

    fn current_shape() -> Value {
        json!({"id":"12660541189","type":"PushEvent",
            "actor":{"id":280740748,"login":"francods9-tech","display_login":"francods9-tech","gravatar_id":"",
                "url":"https://api.github.com/users/francods9-tech","avatar_url":"https://avatars.githubusercontent.com/u/280740748?"},
            "repo":{"id":1251357380,"name":"francods9-tech/customers","url":"https://api.github.com/repos/francods9-tech/customers"},
            "payload":{"repository_id":1251357380,"push_id":34_950_197_608_i64,"ref":"refs/heads/main","head":HEAD,"before":BEFORE},
            "public":true,"created_at":"2026-06-01T15:00:00Z"})
    }

    fn older_shape() -> Value {
        json!({"id":"4290000001","type":"PushEvent",
            "actor":{"id":1,"login":"octo","url":"https://api.github.com/users/octo"},
            "repo":{"id":2,"name":"octo/repo","url":"https://api.github.com/repos/octo/repo"},
            "payload":{"push_id":99,"size":2,"distinct_size":1,"ref":"refs/heads/main","head":HEAD,"before":BEFORE,
                "commits":[{"sha":HEAD,"message":"m","distinct":true}]},
            "public":true,"created_at":"2024-06-01T15:00:00Z"})
    }

    fn push(v: &Value) -> ValidPush {
        match validate(v) {
            Verdict::Push(p) => *p,
            other => panic!("expected a push, got {other:?}"),
        }
    }

    fn rejected(v: &Value) -> Rejection {
        match validate(v) {
            Verdict::Quarantine(r) => r,
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn both_payload_shapes_are_accepted() {
        let now = push(&current_shape());
        assert_eq!(now.github_event_id, "12660541189");
        assert_eq!(now.github_push_id, Some(34950197608));
        assert_eq!(now.commit_count, None);
        assert_eq!(now.repository.full_name, "francods9-tech/customers");
        assert_eq!(now.occurred_at.as_second(), 1_780_326_000);
        let old = push(&older_shape());
        assert_eq!(old.commit_count, Some(2));
        assert_eq!(old.distinct_commit_count, Some(1));
        // Neither commits nor size is required, nor repository_id nor push_id.
        let mut bare = older_shape();
        for field in ["commits", "size", "distinct_size", "push_id"] {
            bare["payload"]
                .as_object_mut()
                .expect("object")
                .remove(field);
        }
        assert_eq!(push(&bare).github_push_id, None);
        // SHA-256 object names are accepted.
        let mut sha256 = current_shape();
        sha256["payload"]["head"] = json!("a".repeat(64));
        assert_eq!(push(&sha256).head_sha.len(), 64);
        assert_eq!(push(&current_shape()).before_sha.as_deref(), Some(BEFORE));
    }

    #[test]
    fn a_push_of_2012_without_before_is_valid_but_a_bad_before_is_not() {
        let mut old = older_shape();
        let payload = old["payload"].as_object_mut().expect("object");
        payload.remove("before");
        assert_eq!(push(&old).before_sha, None);
        old["payload"]["before"] = Value::Null;
        assert_eq!(push(&old).before_sha, None);
        old["payload"]["before"] = json!("not-a-sha");
        let why = rejected(&old);
        assert_eq!(why.code, ErrorCode::InvalidFieldFormat);
        assert!(why.message.contains("payload.before"), "{}", why.message);
    }

    #[test]
    fn other_types_are_ignored_without_further_checks() {
        let v = json!({"id":"1","type":"WatchEvent","payload":{"action":"started"}});
        assert_eq!(
            validate(&v),
            Verdict::Ignored {
                event_type: "WatchEvent".into()
            }
        );
    }

    #[test]
    fn malformed_envelopes_are_classified() {
        let mut no_head = current_shape();
        no_head["payload"]
            .as_object_mut()
            .expect("object")
            .remove("head");
        let r = rejected(&no_head);
        assert_eq!(r.code, ErrorCode::MissingField);
        assert_eq!(r.message, "payload.head is missing");

        let mut bad_head = current_shape();
        bad_head["payload"]["head"] = json!("not-a-valid-object-name");
        let r = rejected(&bad_head);
        assert_eq!(r.code, ErrorCode::InvalidFieldFormat);
        assert_eq!(
            r.message,
            "payload.head is \"not-a-valid-object-name\", not 40 or 64 hexadecimal characters"
        );

        let mut no_type = current_shape();
        no_type.as_object_mut().expect("object").remove("type");
        assert_eq!(rejected(&no_type).message, "type is missing");

        assert_eq!(rejected(&json!([1])).code, ErrorCode::NotAnObject);

        let mut numeric_actor = current_shape();
        numeric_actor["actor"]["id"] = json!("280740748");
        assert_eq!(rejected(&numeric_actor).code, ErrorCode::InvalidFieldType);

        let mut bad_time = current_shape();
        bad_time["created_at"] = json!("yesterday");
        assert_eq!(rejected(&bad_time).code, ErrorCode::InvalidFieldFormat);
        // Instants no GitHub event can have (issue 20, item 9): the year 9998 would sort as
        // the newest row forever.
        for far in [
            "9998-01-01T00:00:00Z",
            "2100-01-01T00:00:00Z",
            "1999-12-31T23:59:59Z",
        ] {
            let mut odd_time = current_shape();
            odd_time["created_at"] = json!(far);
            let r = rejected(&odd_time);
            assert_eq!(r.code, ErrorCode::InvalidFieldFormat, "{far}");
            assert!(
                r.message.contains("outside the years"),
                "{far}: {}",
                r.message
            );
        }
        for edge in ["2008-01-01T00:00:00Z", "2099-12-31T23:59:59Z"] {
            let mut ok_time = current_shape();
            ok_time["created_at"] = json!(edge);
            assert!(
                matches!(validate(&ok_time), Verdict::Push(_)),
                "{edge} is a plausible instant"
            );
        }

        let mut mismatch = current_shape();
        mismatch["payload"]["repository_id"] = json!(5);
        assert_eq!(rejected(&mismatch).code, ErrorCode::InconsistentIdentity);

        let mut bad_repo = current_shape();
        bad_repo["repo"]["name"] = json!("no-slash");
        assert_eq!(rejected(&bad_repo).code, ErrorCode::InvalidFieldFormat);

        // Names that would reach a search query as more than one qualifier (issue 20, defect
        // 3): quarantined, with the field named.
        for (field, bad) in [("login", "alice user:bob"), ("name", "acme/api repo:x/y")] {
            let mut injected = current_shape();
            let target = if field == "login" { "actor" } else { "repo" };
            injected[target][field] = json!(bad);
            let r = rejected(&injected);
            assert_eq!(r.code, ErrorCode::InvalidFieldFormat);
            assert!(r.message.contains(target), "{}", r.message);
        }

        // Issue 20, defect 9: an id with leading zeros names no other event, and a push id is
        // positive.
        let mut padded = current_shape();
        padded["id"] = json!("0050000000001");
        assert_eq!(rejected(&padded).code, ErrorCode::InvalidFieldFormat);
        let mut negative_push = current_shape();
        negative_push["payload"]["push_id"] = json!(-7);
        assert_eq!(rejected(&negative_push).code, ErrorCode::InvalidFieldFormat);

        let mut negative = older_shape();
        negative["payload"]["size"] = json!(-1);
        assert_eq!(rejected(&negative).code, ErrorCode::InvalidFieldFormat);
    }

    #[test]
    fn hints_survive_malformed_envelopes() {
        let v = json!({"id": 42, "type": "PushEvent"});
        assert_eq!(
            identity_hints(&v),
            (Some("42".into()), Some("PushEvent".into()))
        );
        assert_eq!(identity_hints(&json!("x")), (None, None));
    }
}
