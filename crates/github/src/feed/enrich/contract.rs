//! The useful-data contract: what a Search envelope and an entity item must carry to apply.

use headroom_store::feed_state::{Claimed, Enriched, EntityKind};
use serde_json::Value;

/// A Search answer's items and its `incomplete_results`; `None` for a malformed envelope (no
/// `items` array, or a `total_count` that is not a count).
#[doc(hidden)]
pub fn search_envelope(body: &Value) -> Option<(&[Value], Option<bool>)> {
    let items = body.get("items").and_then(Value::as_array)?;
    body.get("total_count").filter(|t| t.is_u64())?;
    let incomplete = body.get("incomplete_results").and_then(Value::as_bool);
    Some((items.as_slice(), incomplete))
}

/// The useful-data contract, on an item whose id matched. `search` items must also carry
/// the name that was asked for (a different name is a rename: detail decides).
#[doc(hidden)]
pub fn validate_item(
    kind: EntityKind,
    member: &Claimed,
    item: &Value,
    search: bool,
) -> Result<Enriched, &'static str> {
    if item.get("id").and_then(Value::as_i64) != Some(member.github_id) {
        return Err("identity_mismatch");
    }
    let str_field = |f: &str| item.get(f).and_then(Value::as_str).map(str::to_owned);
    match kind {
        EntityKind::Actor => {
            let login = str_field("login").ok_or("contract_invalid")?;
            if search && !login.eq_ignore_ascii_case(&member.name) {
                return Err("renamed_actor");
            }
            let account_type = str_field("type").ok_or("contract_invalid")?;
            Ok(Enriched {
                name: login,
                account_type: Some(account_type),
                owner_login: None,
                owner_github_id: None,
                fork: None,
                archived: None,
                default_branch: None,
                github_created_at: None,
                raw: item.clone(),
            })
        }
        EntityKind::Repository => {
            let full_name = str_field("full_name").ok_or("contract_invalid")?;
            if search && !full_name.eq_ignore_ascii_case(&member.name) {
                return Err("renamed_repository");
            }
            let owner = item.get("owner").ok_or("contract_invalid")?;
            let owner_login = owner
                .get("login")
                .and_then(Value::as_str)
                .ok_or("contract_invalid")?;
            let owner_id = owner
                .get("id")
                .and_then(Value::as_i64)
                .ok_or("contract_invalid")?;
            let fork = item
                .get("fork")
                .and_then(Value::as_bool)
                .ok_or("contract_invalid")?;
            let archived = item
                .get("archived")
                .and_then(Value::as_bool)
                .ok_or("contract_invalid")?;
            // Nullable values GitHub returns stay valid nulls; absent keys do not.
            let default_branch = match item.get("default_branch") {
                Some(Value::String(s)) => Some(s.clone()),
                Some(Value::Null) => None,
                _ => return Err("contract_invalid"),
            };
            let created = match item.get("created_at") {
                Some(Value::String(s)) => Some(s.parse().map_err(|_| "contract_invalid")?),
                Some(Value::Null) => None,
                _ => return Err("contract_invalid"),
            };
            Ok(Enriched {
                name: full_name,
                account_type: None,
                owner_login: Some(owner_login.to_owned()),
                owner_github_id: Some(owner_id),
                fork: Some(fork),
                archived: Some(archived),
                default_branch,
                github_created_at: created,
                raw: item.clone(),
            })
        }
    }
}
