//! GitHub's error shapes: the answer to a query over its resource limits, and the
//! reshaping of the engine's errors into GitHub's.

/// GitHub's answer to a query that exceeded its resource limits, from the answer it would
/// have given: every top-level field but `rateLimit` null, one error each with its path and
/// no `type`, as GitHub sends them.
pub fn resource_limited(answer: serde_json::Value) -> serde_json::Value {
    let mut data = answer
        .get("data")
        .cloned()
        .unwrap_or(serde_json::Value::Null);
    let mut errors = Vec::new();
    if let Some(fields) = data.as_object_mut() {
        for (key, value) in fields.iter_mut() {
            if key == "rateLimit" {
                continue;
            }
            *value = serde_json::Value::Null;
            errors.push(serde_json::json!({
                "message": "Resource limits for this query exceeded.",
                "path": [key],
            }));
        }
    }
    serde_json::json!({ "data": data, "errors": errors })
}

/// GitHub's shape of an answer with errors, from the engine's: `extensions.type` moved to
/// the top-level `type` GitHub uses, and a field whose resolver failed present in `data` as
/// `null` at its error's `path` (the engine leaves the key out; GitHub answers the null).
pub fn github_error_shape(mut body: serde_json::Value) -> serde_json::Value {
    let mut paths = Vec::new();
    if let Some(errors) = body.get_mut("errors").and_then(|e| e.as_array_mut()) {
        for e in errors {
            if let Some(obj) = e.as_object_mut() {
                let ty = obj.get("extensions").and_then(|x| x.get("type")).cloned();
                if let Some(ty) = ty {
                    obj.insert("type".to_owned(), ty);
                    obj.remove("extensions");
                }
                if let Some(path) = obj.get("path").and_then(|p| p.as_array()) {
                    paths.push(path.clone());
                }
            }
        }
    }
    if let Some(data) = body.get_mut("data") {
        for path in &paths {
            null_at(data, path);
        }
    }
    body
}

/// Puts a `null` at `path` in `data` where nothing is. The engine leaves a failed field's key
/// out and answers an object none of whose fields resolved as `null`; but an error at
/// `[a, b]` means `a` itself resolved, so a `null` on the way is such an empty object and is
/// answered as one, holding the failed field's `null`.
pub(super) fn null_at(data: &mut serde_json::Value, path: &[serde_json::Value]) {
    let Some((last, parents)) = path.split_last() else {
        return;
    };
    let mut at = data;
    for (k, segment) in parents.iter().enumerate() {
        if at.is_null() && matches!(segment, serde_json::Value::String(_)) {
            *at = serde_json::Value::Object(serde_json::Map::new());
        }
        let next = match segment {
            serde_json::Value::String(key) => {
                let obj = match at.as_object_mut() {
                    Some(obj) => obj,
                    None => return,
                };
                // A parent the engine dropped entirely: present, as an object, if a key follows.
                let follows_key = matches!(
                    parents.get(k + 1).unwrap_or(last),
                    serde_json::Value::String(_)
                );
                if follows_key {
                    Some(obj.entry(key.clone()).or_insert(serde_json::Value::Null))
                } else {
                    obj.get_mut(key.as_str())
                }
            }
            serde_json::Value::Number(n) => n
                .as_u64()
                .and_then(|i| usize::try_from(i).ok())
                .and_then(|i| at.get_mut(i)),
            _ => None,
        };
        match next {
            Some(v) => at = v,
            None => return,
        }
    }
    if at.is_null() {
        *at = serde_json::Value::Object(serde_json::Map::new());
    }
    if let (Some(obj), serde_json::Value::String(key)) = (at.as_object_mut(), last) {
        obj.entry(key.clone()).or_insert(serde_json::Value::Null);
    }
}
