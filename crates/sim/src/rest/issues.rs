//! Issues of a repository: the list, all comments, one issue.

use super::*;

impl Simulator {
    /// Issues, their comments, one issue.
    pub(super) fn issues_route(
        &self,
        ctx: &Ctx,
        mut w: MutexGuard<'_, World>,
        repo: &RepoRec,
        rest: &[&str],
    ) -> Reply {
        let m = &ctx.method;
        let get = *m == Method::GET || *m == Method::HEAD;
        let lpath = |suffix: &str| format!("/repositories/{}/{suffix}", repo.id);
        let base = ctx.base.as_str();
        match rest {
            ["issues"] if get => {
                let state = ctx.param("state").unwrap_or("open").to_owned();
                let mut issues: Vec<IssueRec> = w.content(repo.id).issues.clone();
                issues.retain(|i| state == "all" || (state == "open") == i.open);
                issues.sort_by_key(|i| std::cmp::Reverse(i.number));
                paged(ctx, &issues, &lpath("issues"), |i| {
                    render::issue(base, &w, repo, i)
                })
            }
            ["issues", "comments"] if get => {
                let issues = w.content(repo.id).issues.clone();
                let mut comments: Vec<(u64, &crate::world::CommentRec)> = issues
                    .iter()
                    .flat_map(|i| i.comments.iter().map(move |c| (i.number, c)))
                    .collect();
                comments.sort_by_key(|(_, c)| (c.created_at, c.id));
                paged(ctx, &comments, &lpath("issues/comments"), |(n, c)| {
                    render::comment(base, &w, repo, *n, c)
                })
            }
            ["issues", n] if get => {
                let c = w.content(repo.id).clone();
                match n
                    .parse::<u64>()
                    .ok()
                    .and_then(|n| c.issues.iter().find(|i| i.number == n))
                {
                    Some(i) => Reply::ok(&render::issue(base, &w, repo, i)),
                    None => Reply::not_found(),
                }
            }
            _ => Reply::not_found(),
        }
    }
}
