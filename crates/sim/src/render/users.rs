//! Accounts: a user as lists, references and profiles show it, and the authenticated user.

use super::*;

/// A user (or organization) as embedded in other objects: GitHub's `simple-user`.
pub fn user_simple(base: &str, u: &UserRec) -> Value {
    account(base, &u.login, u.id, u.is_org)
}

/// `simple-user` for any login and id (`id` 0 for a login the world does not know).
pub(super) fn account(base: &str, login: &str, id: u64, is_org: bool) -> Value {
    let api = format!("{base}/users/{login}");
    json!({
        "login": login,
        "id": id,
        "node_id": node_id(if is_org { "O" } else { "U" }, id),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?v=4"),
        "gravatar_id": "",
        "url": api,
        "html_url": format!("https://github.com/{login}"),
        "followers_url": format!("{api}/followers"),
        "following_url": format!("{api}/following{{/other_user}}"),
        "gists_url": format!("{api}/gists{{/gist_id}}"),
        "starred_url": format!("{api}/starred{{/owner}}{{/repo}}"),
        "subscriptions_url": format!("{api}/subscriptions"),
        "organizations_url": format!("{api}/orgs"),
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events{{/privacy}}"),
        "received_events_url": format!("{api}/received_events"),
        "type": if is_org { "Organization" } else { "User" },
        "user_view_type": "public",
        "site_admin": false,
    })
}

/// A user by login, falling back to a minimal object for logins the world does not know.
pub fn user_ref(base: &str, world: &World, login: &str) -> Value {
    match world.user(login) {
        Some(u) => user_simple(base, u),
        None => account(base, login, 0, false),
    }
}

/// `GET /users/{login}`, `GET /user/{id}`: GitHub's `public-user`, which admits no other key.
pub fn user_full(base: &str, u: &UserRec, public_repos: usize) -> Value {
    let mut v = user_simple(base, u);
    if let Value::Object(m) = &mut v {
        m.insert("name".into(), json!(u.name));
        m.insert("company".into(), Value::Null);
        m.insert("blog".into(), json!(""));
        m.insert("location".into(), Value::Null);
        m.insert("email".into(), Value::Null);
        m.insert("hireable".into(), Value::Null);
        m.insert("bio".into(), Value::Null);
        m.insert("twitter_username".into(), Value::Null);
        m.insert("public_repos".into(), json!(public_repos));
        m.insert("public_gists".into(), json!(0));
        m.insert("followers".into(), json!(u.id % 97));
        m.insert("following".into(), json!(u.id % 13));
        m.insert("created_at".into(), json!(ts(u.created_at)));
        m.insert("updated_at".into(), json!(ts(u.created_at)));
    }
    v
}

/// `GET /user`: the authenticated user sees their private profile (`private-user`).
pub fn user_private(base: &str, u: &UserRec, public_repos: usize, private_repos: usize) -> Value {
    let mut v = user_full(base, u, public_repos);
    if let Value::Object(m) = &mut v {
        m.insert("user_view_type".into(), json!("private"));
        m.insert("private_gists".into(), json!(0));
        m.insert("total_private_repos".into(), json!(private_repos));
        m.insert("owned_private_repos".into(), json!(private_repos));
        m.insert("disk_usage".into(), json!(0));
        m.insert("collaborators".into(), json!(0));
        m.insert("two_factor_authentication".into(), json!(true));
    }
    v
}
