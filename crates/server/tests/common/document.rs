//! Every JSON answer a test receives is held to the OpenAPI document the server publishes:
//! the path must be documented, the status declared for it, and the body must validate
//! against the declared schema (JSON Schema 2020-12, as OpenAPI 3.1 defines it). So a
//! response shape that drifts from `/openapi.json` fails the test that saw it.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, OnceLock};

use serde_json::{Value, json};

fn document() -> &'static Value {
    static DOCUMENT: OnceLock<Value> = OnceLock::new();
    DOCUMENT.get_or_init(|| {
        serde_json::from_str(&headroom_server::openapi::json()).expect("the document is JSON")
    })
}

/// The documented path template `uri`'s path matches (`{x}` matches one segment).
pub fn template_of(uri: &str) -> Option<String> {
    let path = uri.split('?').next().unwrap_or(uri);
    let segments: Vec<&str> = path.split('/').collect();
    document()["paths"]
        .as_object()?
        .keys()
        .find(|template| {
            let parts: Vec<&str> = template.split('/').collect();
            parts.len() == segments.len()
                && parts
                    .iter()
                    .zip(&segments)
                    .all(|(p, s)| p == s || (p.starts_with('{') && !s.is_empty()))
        })
        .cloned()
}

fn validator(schema: &Value) -> Arc<jsonschema::Validator> {
    static COMPILED: OnceLock<Mutex<HashMap<String, Arc<jsonschema::Validator>>>> = OnceLock::new();
    let key = schema.to_string();
    let cache = COMPILED.get_or_init(Mutex::default);
    if let Some(v) = cache.lock().expect("cache").get(&key) {
        return Arc::clone(v);
    }
    let root = json!({
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "allOf": [schema],
        "components": document()["components"],
    });
    let compiled = Arc::new(
        jsonschema::options()
            .with_draft(jsonschema::Draft::Draft202012)
            .build(&root)
            .unwrap_or_else(|e| panic!("the document's schema {schema} does not compile: {e}")),
    );
    cache
        .lock()
        .expect("cache")
        .insert(key, Arc::clone(&compiled));
    compiled
}

/// Panics unless `body` (a JSON answer of `GET uri` with `status`) is what the document says.
pub fn conforms(uri: &str, status: u16, body: &Value) {
    let Some(template) = template_of(uri) else {
        // The fallback: an undocumented path answers 404 with the error body.
        assert_eq!(
            status, 404,
            "GET {uri} is not documented, yet answered {status}"
        );
        let errors = json!({"$ref": "#/components/schemas/ErrorBody"});
        assert!(validator(&errors).is_valid(body), "GET {uri}: {body}");
        return;
    };
    let operation = &document()["paths"][&template]["get"];
    let response = &operation["responses"][status.to_string()];
    assert!(
        response.is_object(),
        "GET {template} does not declare status {status}"
    );
    let Some(schema) = response["content"]["application/json"].get("schema") else {
        panic!("GET {template} {status} declares no JSON body, yet answered one");
    };
    let validator = validator(schema);
    let errors: Vec<String> = validator
        .iter_errors(body)
        .map(|e| format!("{} at {}", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "GET {uri} {status} does not match the document:\n{}\nbody: {body}",
        errors.join("\n")
    );
}
