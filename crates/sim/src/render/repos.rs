//! Repositories (as listed and in full), the organization and its teams.

use super::*;

/// The URL templates of a repository object, under its API URL.
pub(super) const REPO_URLS: [(&str, &str); 35] = [
    ("archive_url", "/{archive_format}{/ref}"),
    ("assignees_url", "/assignees{/user}"),
    ("blobs_url", "/git/blobs{/sha}"),
    ("branches_url", "/branches{/branch}"),
    ("collaborators_url", "/collaborators{/collaborator}"),
    ("comments_url", "/comments{/number}"),
    ("commits_url", "/commits{/sha}"),
    ("compare_url", "/compare/{base}...{head}"),
    ("contents_url", "/contents/{+path}"),
    ("contributors_url", "/contributors"),
    ("deployments_url", "/deployments"),
    ("downloads_url", "/downloads"),
    ("events_url", "/events"),
    ("forks_url", "/forks"),
    ("git_commits_url", "/git/commits{/sha}"),
    ("git_refs_url", "/git/refs{/sha}"),
    ("git_tags_url", "/git/tags{/sha}"),
    ("issue_comment_url", "/issues/comments{/number}"),
    ("issue_events_url", "/issues/events{/number}"),
    ("issues_url", "/issues{/number}"),
    ("keys_url", "/keys{/key_id}"),
    ("labels_url", "/labels{/name}"),
    ("languages_url", "/languages"),
    ("merges_url", "/merges"),
    ("milestones_url", "/milestones{/number}"),
    (
        "notifications_url",
        "/notifications{?since,all,participating}",
    ),
    ("pulls_url", "/pulls{/number}"),
    ("releases_url", "/releases{/id}"),
    ("stargazers_url", "/stargazers"),
    ("statuses_url", "/statuses/{sha}"),
    ("subscribers_url", "/subscribers"),
    ("subscription_url", "/subscription"),
    ("tags_url", "/tags"),
    ("teams_url", "/teams"),
    ("trees_url", "/git/trees{/sha}"),
];

/// A repository as lists, searches and other objects embed it: the fields of GitHub's
/// `repository`, which also satisfy `minimal-repository` and `repo-search-result-item`.
pub fn repo(base: &str, world: &World, r: &RepoRec) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}");
    let open_issues = r.id % 11;
    let forks = r.stars / 7;
    let mut v = json!({
        "id": r.id,
        "node_id": node_id("R", r.id),
        "name": r.name,
        "full_name": full,
        "private": r.private,
        "owner": user_ref(base, world, &r.owner),
        "html_url": format!("https://github.com/{full}"),
        "description": r.description,
        "fork": false,
        "url": api,
        "clone_url": format!("https://github.com/{full}.git"),
        "mirror_url": Value::Null,
        "hooks_url": format!("{api}/hooks"),
        "svn_url": format!("https://github.com/{full}"),
    });
    // Two literals: one would pass serde_json's macro recursion limit.
    let counts = json!({
        "homepage": Value::Null,
        "language": r.language,
        "forks_count": forks,
        "forks": forks,
        "stargazers_count": r.stars,
        "watchers_count": r.stars,
        "watchers": r.stars,
        "size": r.id % 5000,
        "default_branch": r.default_branch,
        "open_issues_count": open_issues,
        "open_issues": open_issues,
        "is_template": false,
        "topics": [],
        "has_issues": true,
        "has_projects": true,
        "has_wiki": true,
        "has_pages": false,
        "has_downloads": true,
        "has_discussions": false,
        "archived": false,
        "disabled": false,
        "visibility": if r.private { "private" } else { "public" },
        "pushed_at": ts(r.updated_at),
        "created_at": ts(r.created_at),
        "updated_at": ts(r.updated_at),
        "allow_forking": true,
        "web_commit_signoff_required": false,
        "license": Value::Null,
    });
    if let (Value::Object(m), Value::Object(more)) = (&mut v, counts) {
        m.extend(more);
        for (key, suffix) in REPO_URLS {
            m.insert(key.into(), json!(format!("{api}{suffix}")));
        }
        m.insert(
            "git_url".into(),
            json!(format!("git://github.com/{full}.git")),
        );
        m.insert(
            "ssh_url".into(),
            json!(format!("git@github.com:{full}.git")),
        );
    }
    v
}

/// `GET /repos/{owner}/{repo}` and a created repository: GitHub's `full-repository`, with the
/// counts and the organization only the single-repository answer carries.
pub fn repo_full(base: &str, world: &World, r: &RepoRec) -> Value {
    let mut v = repo(base, world, r);
    if let Value::Object(m) = &mut v {
        m.insert("network_count".into(), json!(r.stars / 7));
        m.insert("subscribers_count".into(), json!(r.stars % 41));
        if r.owner.eq_ignore_ascii_case(&world.org.login) {
            m.insert("organization".into(), user_ref(base, world, &r.owner));
        }
    }
    v
}

/// An organization: `GET /orgs/{org}` (`organization-full`).
pub fn org(base: &str, o: &OrgRec, public_repos: usize, created_at: Timestamp) -> Value {
    let api = format!("{base}/orgs/{}", o.login);
    json!({
        "login": o.login,
        "id": o.id,
        "node_id": node_id("O", o.id),
        "url": api,
        "repos_url": format!("{api}/repos"),
        "events_url": format!("{api}/events"),
        "hooks_url": format!("{api}/hooks"),
        "issues_url": format!("{api}/issues"),
        "members_url": format!("{api}/members{{/member}}"),
        "public_members_url": format!("{api}/public_members{{/member}}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{}?v=4", o.id),
        "description": "A generated organization",
        "name": format!("{} Inc.", o.login),
        // No `blog`, `company`, `location` or `email`: GitHub's description makes them
        // non-null strings (`blog` a URI), so an organization without them leaves them out.
        "twitter_username": Value::Null,
        "is_verified": false,
        "has_organization_projects": true,
        "has_repository_projects": true,
        "public_repos": public_repos,
        "public_gists": 0,
        "followers": o.members.len(),
        "following": 0,
        "html_url": format!("https://github.com/{}", o.login),
        "type": "Organization",
        "created_at": ts(created_at),
        "updated_at": ts(created_at),
        "archived_at": Value::Null,
    })
}

/// A team.
pub fn team(base: &str, org: &str, t: &TeamRec) -> Value {
    let api = format!("{base}/orgs/{org}/teams/{}", t.slug);
    json!({
        "id": t.id,
        "node_id": node_id("T", t.id),
        "name": t.name,
        "slug": t.slug,
        "description": t.description,
        "privacy": "closed",
        "notification_setting": "notifications_enabled",
        "permission": "pull",
        "url": api,
        "html_url": format!("https://github.com/orgs/{org}/teams/{}", t.slug),
        "members_url": format!("{api}/members{{/member}}"),
        "repositories_url": format!("{api}/repos"),
        "type": "organization",
        "parent": Value::Null,
    })
}
