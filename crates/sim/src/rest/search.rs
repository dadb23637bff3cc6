//! The search API (`/search/{kind}`): issues and pull requests, and repositories.

use super::*;

impl Simulator {
    pub(super) fn search(&self, ctx: &Ctx, kind: &str) -> Reply {
        let inner = &self.inner;
        let Some(q) = ctx.param("q").filter(|q| !q.trim().is_empty()) else {
            return validation_failed(
                json!([{"resource": "Search", "field": "q", "code": "missing"}]),
            );
        };
        if inner.config.scenario == Scenario::SearchMalformed {
            let mut r = Reply::json(
                StatusCode::OK,
                &json!({"total_count": "2", "incomplete_results": false, "items": {"unavailable": true}}),
            );
            r.etag = false;
            return r;
        }
        let mut users = Vec::new();
        let mut repos = Vec::new();
        let mut orgs = Vec::new();
        let mut words = Vec::new();
        for term in q.split_whitespace() {
            match term.split_once(':') {
                Some(("user", v)) => users.push(v.to_ascii_lowercase()),
                Some(("repo", v)) => repos.push(v.to_ascii_lowercase()),
                Some(("org", v)) => orgs.push(v.to_ascii_lowercase()),
                Some(_) => {}
                None => words.push(term.to_ascii_lowercase()),
            }
        }
        let incomplete_scenario = inner.config.scenario == Scenario::SearchIncompleteResults;
        let hidden_user = crate::world::fixture::ACTORS[2].0;
        let hidden_repo = crate::world::fixture::REPOS[2].0;
        let w = lock(&inner.world);
        let (items, incomplete): (Vec<Value>, bool) = match kind {
            "users" => {
                let found: Vec<Value> = w
                    .users
                    .iter()
                    .filter(|u| !u.deleted)
                    .filter(|u| !(incomplete_scenario && u.id == hidden_user))
                    .filter(|u| {
                        let login = u.login.to_ascii_lowercase();
                        let by_user = users.is_empty() || users.contains(&login);
                        let by_word = words.iter().all(|wd| login.contains(wd.as_str()));
                        (!users.is_empty() || !words.is_empty()) && by_user && by_word
                    })
                    .map(|u| {
                        let mut v = render::user_simple(&ctx.base, u);
                        if let Some(o) = v.as_object_mut() {
                            o.insert("score".into(), json!(1.0));
                        }
                        v
                    })
                    .collect();
                (found, incomplete_scenario)
            }
            "repositories" => {
                let found: Vec<Value> = w
                    .repos
                    .iter()
                    .filter(|r| !r.deleted && !r.private)
                    .filter(|r| !(incomplete_scenario && r.id == hidden_repo))
                    .filter(|r| {
                        let full = r.full_name().to_ascii_lowercase();
                        let owner = r.owner.to_ascii_lowercase();
                        let by_repo = repos.is_empty()
                            || repos.contains(&full)
                            || (r.searchable_by_old_name
                                && r.previous_names
                                    .iter()
                                    .any(|p| repos.contains(&p.to_ascii_lowercase())));
                        let by_owner = (users.is_empty() && orgs.is_empty())
                            || users.contains(&owner)
                            || orgs.contains(&owner);
                        let by_word = words
                            .iter()
                            .all(|wd| r.name.to_ascii_lowercase().contains(wd.as_str()));
                        let any = !repos.is_empty()
                            || !users.is_empty()
                            || !orgs.is_empty()
                            || !words.is_empty();
                        any && by_repo && by_owner && by_word
                    })
                    .map(|r| {
                        let mut v = render::repo(&ctx.base, &w, r);
                        if let Some(o) = v.as_object_mut() {
                            o.insert("score".into(), json!(1.0));
                        }
                        v
                    })
                    .collect();
                (found, incomplete_scenario)
            }
            "code" | "issues" | "commits" | "topics" | "labels" => (Vec::new(), false),
            _ => return Reply::not_found(),
        };
        drop(w);
        let (page, per_page) = page_params(ctx);
        let total = items.len();
        // Search serves at most the first 1,000 results.
        let (items, last, has_next) = slice_page(
            &items[..items.len().min(1000)],
            page,
            per_page,
            Value::clone,
        );
        let mut body =
            json!({"total_count": total, "incomplete_results": incomplete, "items": items});
        // Issue search says which engine answered; the simulator's is plain lexical matching.
        if kind == "issues"
            && let Some(o) = body.as_object_mut()
        {
            o.insert("search_type".into(), json!("lexical"));
        }
        let mut reply = Reply::json(StatusCode::OK, &body);
        reply.etag = false;
        match link_header(ctx, &format!("/search/{kind}"), page, last, has_next) {
            Some(l) => reply.header("link", &l),
            None => reply,
        }
    }
}
