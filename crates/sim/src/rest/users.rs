//! Users and the organization: `/user`, `/user/{id}`, `/users/{login}`, `/orgs/{org}` and
//! its repository, member and team lists.

use super::*;

impl Simulator {
    pub(super) fn authenticated_user(&self, ctx: &Ctx) -> Reply {
        use crate::quota::Subject;
        match &ctx.subject {
            Subject::User { login, .. } => {
                let w = lock(&self.inner.world);
                match w.user(login) {
                    Some(u) => {
                        let owned = || {
                            w.repos
                                .iter()
                                .filter(|r| r.owner.eq_ignore_ascii_case(login) && !r.deleted)
                        };
                        let public = owned().filter(|r| !r.private).count();
                        let private = owned().filter(|r| r.private).count();
                        Reply::ok(&render::user_private(&ctx.base, u, public, private))
                    }
                    None => Reply::not_found(),
                }
            }
            Subject::Installation { .. } => Reply::message(
                StatusCode::FORBIDDEN,
                "Resource not accessible by integration",
                "https://docs.github.com/rest/users/users#get-the-authenticated-user",
            ),
            Subject::Ip(_) => Reply::message(
                StatusCode::UNAUTHORIZED,
                "Requires authentication",
                "https://docs.github.com/rest/users/users#get-the-authenticated-user",
            ),
        }
    }
}
