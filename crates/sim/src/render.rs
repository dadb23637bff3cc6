//! JSON bodies in GitHub's REST shapes. `base` is the API root the client used
//! (`https://api.github.com` or the simulator's own address), so that every URL in a body
//! leads back to the simulator.

use headroom_core::clock::Timestamp;
use serde_json::{Value, json};

use crate::world::{
    BranchRec, CommentRec, CommitRec, FileRec, IssueRec, JobRec, OrgRec, PullRec, RepoContent,
    RepoRec, RunRec, TeamRec, UserRec, World,
};

/// GitHub's timestamp format (`2026-01-01T00:00:00Z`).
pub fn ts(t: Timestamp) -> String {
    t.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn node_id(prefix: &str, id: u64) -> String {
    format!("{prefix}_kgDO{id:08X}")
}

/// A user (or organization) as embedded in other objects: GitHub's `simple-user`.
pub fn user_simple(base: &str, u: &UserRec) -> Value {
    account(base, &u.login, u.id, u.is_org)
}

/// `simple-user` for any login and id (`id` 0 for a login the world does not know).
fn account(base: &str, login: &str, id: u64, is_org: bool) -> Value {
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

/// The URL templates of a repository object, under its API URL.
const REPO_URLS: [(&str, &str); 35] = [
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

/// A label's id: stable per repository and name, as GitHub's are.
fn label_id(full: &str, name: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in full.bytes().chain([0]).chain(name.bytes()) {
        h = (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3);
    }
    h % 9_000_000_000 + 1_000_000_000
}

fn labels(base: &str, full: &str, names: &[String]) -> Value {
    Value::Array(
        names
            .iter()
            .map(|n| {
                let id = label_id(full, n);
                json!({
                    "id": id,
                    "node_id": node_id("LA", id),
                    "url": format!("{base}/repos/{full}/labels/{}", percent(n)),
                    "name": n,
                    // A string: pull-request-simple's labels require one.
                    "description": "",
                    "color": "ededed",
                    "default": false,
                })
            })
            .collect(),
    )
}

/// A path segment, percent-encoded (label names have spaces).
fn percent(s: &str) -> String {
    percent_encoding::utf8_percent_encode(s, percent_encoding::NON_ALPHANUMERIC).to_string()
}

fn reactions(url: String) -> Value {
    json!({
        "url": url, "total_count": 0, "+1": 0, "-1": 0, "laugh": 0, "confused": 0,
        "heart": 0, "hooray": 0, "eyes": 0, "rocket": 0,
    })
}

/// An issue (pull requests carry a `pull_request` key, as in `/issues` lists).
pub fn issue(base: &str, world: &World, r: &RepoRec, i: &IssueRec) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}/issues/{}", i.number);
    let mut v = json!({
        "id": i.id,
        "node_id": node_id("I", i.id),
        "url": api,
        "repository_url": format!("{base}/repos/{full}"),
        "labels_url": format!("{api}/labels{{/name}}"),
        "comments_url": format!("{api}/comments"),
        "events_url": format!("{api}/events"),
        "html_url": format!("https://github.com/{full}/issues/{}", i.number),
        "number": i.number,
        "state": if i.open { "open" } else { "closed" },
        "state_reason": if i.open { Value::Null } else { json!("completed") },
        "title": i.title,
        "body": i.body,
        "user": user_ref(base, world, &i.user),
        "labels": labels(base, &full, &i.labels),
        "assignee": Value::Null,
        "assignees": [],
        "milestone": Value::Null,
        "locked": false,
        "active_lock_reason": Value::Null,
        "comments": i.comments.len(),
        "created_at": ts(i.created_at),
        "updated_at": ts(i.updated_at),
        "closed_at": if i.open { Value::Null } else { json!(ts(i.updated_at)) },
        "author_association": "MEMBER",
        "timeline_url": format!("{api}/timeline"),
        "reactions": reactions(format!("{api}/reactions")),
    });
    if i.pull.is_some()
        && let Value::Object(m) = &mut v
    {
        m.insert(
            "pull_request".into(),
            json!({
                "url": format!("{base}/repos/{full}/pulls/{}", i.number),
                "html_url": format!("https://github.com/{full}/pull/{}", i.number),
                "diff_url": format!("https://github.com/{full}/pull/{}.diff", i.number),
                "patch_url": format!("https://github.com/{full}/pull/{}.patch", i.number),
                "merged_at": Value::Null,
            }),
        );
    }
    v
}

/// An issue comment.
pub fn comment(base: &str, world: &World, r: &RepoRec, issue_number: u64, c: &CommentRec) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}/issues/comments/{}", c.id);
    json!({
        "id": c.id,
        "node_id": node_id("IC", c.id),
        "url": api,
        "html_url": format!("https://github.com/{full}/issues/{issue_number}#issuecomment-{}", c.id),
        "issue_url": format!("{base}/repos/{full}/issues/{issue_number}"),
        "body": c.body,
        "user": user_ref(base, world, &c.user),
        "created_at": ts(c.created_at),
        "updated_at": ts(c.created_at),
        "author_association": "MEMBER",
        "reactions": reactions(format!("{api}/reactions")),
    })
}

/// A pull request as listed (`pull-request-simple`).
pub fn pull(base: &str, world: &World, r: &RepoRec, i: &IssueRec, p: &PullRec) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}/pulls/{}", p.number);
    let issue_api = format!("{base}/repos/{full}/issues/{}", p.number);
    let html = format!("https://github.com/{full}/pull/{}", p.number);
    let repo_v = repo(base, world, r);
    let owner = user_ref(base, world, &r.owner);
    let side = |name: &str, sha: &str| {
        json!({
            "label": format!("{}:{name}", r.owner),
            "ref": name,
            "sha": sha,
            "user": owner.clone(),
            "repo": repo_v.clone(),
        })
    };
    let statuses = format!("{base}/repos/{full}/statuses/{}", p.head_sha);
    let links = json!({
        "self": {"href": api},
        "html": {"href": html},
        "issue": {"href": issue_api},
        "comments": {"href": format!("{issue_api}/comments")},
        "review_comments": {"href": format!("{api}/comments")},
        "review_comment": {"href": format!("{base}/repos/{full}/pulls/comments{{/number}}")},
        "commits": {"href": format!("{api}/commits")},
        "statuses": {"href": statuses},
    });
    json!({
        "id": p.id,
        "node_id": node_id("PR", p.id),
        "url": api,
        "html_url": html,
        "diff_url": format!("{html}.diff"),
        "patch_url": format!("{html}.patch"),
        "issue_url": issue_api,
        "commits_url": format!("{api}/commits"),
        "review_comments_url": format!("{api}/comments"),
        "review_comment_url": format!("{base}/repos/{full}/pulls/comments{{/number}}"),
        "comments_url": format!("{issue_api}/comments"),
        "statuses_url": statuses,
        "number": p.number,
        "state": if i.open { "open" } else { "closed" },
        "locked": false,
        "active_lock_reason": Value::Null,
        "title": i.title,
        "body": i.body,
        "user": user_ref(base, world, &i.user),
        "labels": labels(base, &full, &i.labels),
        "milestone": Value::Null,
        "assignee": Value::Null,
        "assignees": [],
        "requested_reviewers": [],
        "requested_teams": [],
        "created_at": ts(i.created_at),
        "updated_at": ts(i.updated_at),
        "closed_at": if i.open { Value::Null } else { json!(ts(i.updated_at)) },
        "merged_at": p.merged_at.map(ts),
        "merge_commit_sha": p.merge_sha,
        "draft": false,
        "head": side(&p.head, &p.head_sha),
        "base": side(&p.base, &p.base_sha),
        "_links": links,
        "author_association": "MEMBER",
        "auto_merge": Value::Null,
    })
}

/// A single pull request (`pull-request`): the listed fields, its counts and merge state.
/// `c` is its repository's content (the commits it counts lines of).
pub fn pull_full(
    base: &str,
    world: &World,
    r: &RepoRec,
    i: &IssueRec,
    p: &PullRec,
    c: &RepoContent,
) -> Value {
    let mut v = pull(base, world, r, i, p);
    let commits: Vec<&CommitRec> = p.commits.iter().filter_map(|s| c.commits.get(s)).collect();
    let files: std::collections::BTreeSet<&str> = commits
        .iter()
        .flat_map(|cm| cm.files.iter().map(|f| f.filename.as_str()))
        .collect();
    let merged_by = p
        .merge_sha
        .as_ref()
        .and_then(|s| c.commits.get(s))
        .map_or(Value::Null, |cm| user_ref(base, world, &cm.author));
    let mergeable = i.open && !p.merged;
    if let Value::Object(m) = &mut v {
        m.insert("merged".into(), json!(p.merged));
        m.insert("mergeable".into(), json!(mergeable));
        m.insert("rebaseable".into(), json!(mergeable));
        m.insert(
            "mergeable_state".into(),
            json!(if mergeable { "clean" } else { "unknown" }),
        );
        m.insert("merged_by".into(), merged_by);
        m.insert("comments".into(), json!(i.comments.len()));
        m.insert("review_comments".into(), json!(0));
        m.insert("maintainer_can_modify".into(), json!(false));
        m.insert("commits".into(), json!(p.commits.len()));
        m.insert(
            "additions".into(),
            json!(
                commits
                    .iter()
                    .flat_map(|cm| &cm.files)
                    .map(|f| f.additions)
                    .sum::<u64>()
            ),
        );
        m.insert(
            "deletions".into(),
            json!(
                commits
                    .iter()
                    .flat_map(|cm| &cm.files)
                    .map(|f| f.deletions)
                    .sum::<u64>()
            ),
        );
        m.insert("changed_files".into(), json!(files.len()));
    }
    v
}

/// A changed file (`diff-entry`).
pub fn file(base: &str, full: &str, f: &FileRec) -> Value {
    let path = f
        .filename
        .split('/')
        .map(percent)
        .collect::<Vec<_>>()
        .join("/");
    json!({
        "sha": f.sha,
        "filename": f.filename,
        "status": f.status,
        "additions": f.additions,
        "deletions": f.deletions,
        "changes": f.additions + f.deletions,
        "blob_url": format!("https://github.com/{full}/blob/{}/{path}", f.sha),
        "raw_url": format!("https://github.com/{full}/raw/{}/{path}", f.sha),
        "contents_url": format!("{base}/repos/{full}/contents/{path}?ref={}", f.sha),
        "patch": format!("@@ -1,{} +1,{} @@", f.deletions, f.additions),
    })
}

/// A commit's tree sha.
fn tree_sha(c: &CommitRec) -> String {
    crate::world::tree_sha(&c.tree)
}

/// A commit of the Git data API (`git-commit`).
pub fn git_commit(base: &str, world: &World, full: &str, c: &CommitRec) -> Value {
    let person = json!({
        "name": world.user(&c.author).and_then(|u| u.name.clone()).unwrap_or_else(|| c.author.clone()),
        "email": format!("{}@users.noreply.github.com", c.author),
        "date": ts(c.date),
    });
    let tree = tree_sha(c);
    json!({
        "sha": c.sha,
        "node_id": format!("C_{}", &c.sha[..16.min(c.sha.len())]),
        "url": format!("{base}/repos/{full}/git/commits/{}", c.sha),
        "html_url": format!("https://github.com/{full}/commit/{}", c.sha),
        "author": person.clone(),
        "committer": person,
        "message": c.message,
        "tree": {"sha": tree, "url": format!("{base}/repos/{full}/git/trees/{tree}")},
        "parents": c.parents.iter().map(|p| json!({
            "sha": p,
            "url": format!("{base}/repos/{full}/git/commits/{p}"),
            "html_url": format!("https://github.com/{full}/commit/{p}"),
        })).collect::<Vec<_>>(),
        "verification": {
            "verified": false, "reason": "unsigned", "signature": Value::Null,
            "payload": Value::Null, "verified_at": Value::Null,
        },
    })
}

/// A commit as listed (`/pulls/{n}/commits`); `with_files` adds stats and files
/// (`/commits/{sha}`).
pub fn commit(base: &str, world: &World, full: &str, c: &CommitRec, with_files: bool) -> Value {
    let author = world.user(&c.author);
    let person = json!({
        "name": author.and_then(|u| u.name.clone()).unwrap_or_else(|| c.author.clone()),
        "email": format!("{}@users.noreply.github.com", c.author),
        "date": ts(c.date),
    });
    let api = format!("{base}/repos/{full}/commits/{}", c.sha);
    let tree = tree_sha(c);
    let mut v = json!({
        "sha": c.sha,
        "node_id": format!("C_{}", &c.sha[..16.min(c.sha.len())]),
        "url": api,
        "html_url": format!("https://github.com/{full}/commit/{}", c.sha),
        "comments_url": format!("{api}/comments"),
        "commit": {
            "url": format!("{base}/repos/{full}/git/commits/{}", c.sha),
            "author": person.clone(),
            "committer": person,
            "message": c.message,
            "tree": {"sha": tree, "url": format!("{base}/repos/{full}/git/trees/{tree}")},
            "comment_count": 0,
            "verification": {
                "verified": false, "reason": "unsigned", "signature": Value::Null,
                "payload": Value::Null, "verified_at": Value::Null,
            },
        },
        "author": user_ref(base, world, &c.author),
        "committer": user_ref(base, world, &c.author),
        "parents": c.parents.iter().map(|p| json!({
            "sha": p,
            "url": format!("{base}/repos/{full}/commits/{p}"),
            "html_url": format!("https://github.com/{full}/commit/{p}"),
        })).collect::<Vec<_>>(),
    });
    if with_files && let Value::Object(m) = &mut v {
        let additions: u64 = c.files.iter().map(|f| f.additions).sum();
        let deletions: u64 = c.files.iter().map(|f| f.deletions).sum();
        m.insert(
            "stats".into(),
            json!({"total": additions + deletions, "additions": additions, "deletions": deletions}),
        );
        m.insert(
            "files".into(),
            Value::Array(c.files.iter().map(|f| file(base, full, f)).collect()),
        );
    }
    v
}

/// A branch as listed (`short-branch`).
pub fn branch(base: &str, full: &str, b: &BranchRec) -> Value {
    json!({
        "name": b.name,
        "commit": {"sha": b.sha, "url": format!("{base}/repos/{full}/commits/{}", b.sha)},
        "protected": b.protection.is_some(),
        "protection": protection_summary(b),
        "protection_url": format!("{base}/repos/{full}/branches/{}/protection", percent(&b.name)),
    })
}

/// What a branch answer says of its protection (`branch-protection`, summarised).
fn protection_summary(b: &BranchRec) -> Value {
    let p = b.protection.as_ref();
    let contexts = p
        .and_then(|p| p.get("required_status_checks"))
        .and_then(|c| c.get("contexts"))
        .cloned()
        .unwrap_or_else(|| json!([]));
    let checks = p
        .and_then(|p| p.get("required_status_checks"))
        .filter(|c| !c.is_null());
    json!({
        "enabled": p.is_some(),
        "required_status_checks": {
            "enforcement_level": if checks.is_some() { "non_admins" } else { "off" },
            "contexts": contexts,
            "checks": status_checks(checks),
        },
    })
}

/// `checks` of a status-check requirement: GitHub lists each context with its app (none).
fn status_checks(required: Option<&Value>) -> Value {
    let from_checks = required
        .and_then(|r| r.get("checks"))
        .and_then(Value::as_array)
        .cloned();
    match from_checks {
        Some(checks) => Value::Array(checks),
        None => Value::Array(
            required
                .and_then(|r| r.get("contexts"))
                .and_then(Value::as_array)
                .map(|c| {
                    c.iter()
                        .map(|ctx| json!({"context": ctx, "app_id": Value::Null}))
                        .collect()
                })
                .unwrap_or_default(),
        ),
    }
}

/// `GET /repos/{owner}/{repo}/branches/{branch}` (`branch-with-protection`).
pub fn branch_detail(
    base: &str,
    world: &World,
    full: &str,
    b: &BranchRec,
    head: &CommitRec,
) -> Value {
    let mut v = branch(base, full, b);
    if let Value::Object(m) = &mut v {
        m.insert("commit".into(), commit(base, world, full, head, false));
        m.insert(
            "_links".into(),
            json!({
                "self": format!("{base}/repos/{full}/branches/{}", percent(&b.name)),
                "html": format!("https://github.com/{full}/tree/{}", b.name),
            }),
        );
    }
    v
}

/// A branch's protection as stored from `PUT …/protection`, in GitHub's answer shape.
/// `put` selects the PUT answer (`protected-branch`); otherwise the GET one
/// (`branch-protection`). A requirement sent as null is off, and GitHub leaves it out.
pub fn protection(base: &str, full: &str, branch: &str, p: &Value, put: bool) -> Value {
    let url = format!(
        "{base}/repos/{full}/branches/{}/protection",
        percent(branch)
    );
    let flag = |key: &str| json!({"enabled": p.get(key).and_then(Value::as_bool).unwrap_or(false)});
    let mut m = serde_json::Map::new();
    m.insert("url".into(), json!(url));
    if let Some(checks) = p.get("required_status_checks").filter(|c| !c.is_null()) {
        m.insert(
            "required_status_checks".into(),
            json!({
                "url": format!("{url}/required_status_checks"),
                "strict": checks.get("strict").and_then(Value::as_bool).unwrap_or(false),
                "contexts": checks.get("contexts").cloned().unwrap_or_else(|| json!([])),
                "contexts_url": format!("{url}/required_status_checks/contexts"),
                "checks": status_checks(Some(checks)),
            }),
        );
    }
    if let Some(reviews) = p
        .get("required_pull_request_reviews")
        .filter(|r| !r.is_null())
    {
        let b = |key: &str| reviews.get(key).and_then(Value::as_bool).unwrap_or(false);
        m.insert(
            "required_pull_request_reviews".into(),
            json!({
                "url": format!("{url}/required_pull_request_reviews"),
                "dismiss_stale_reviews": b("dismiss_stale_reviews"),
                "require_code_owner_reviews": b("require_code_owner_reviews"),
                "require_last_push_approval": b("require_last_push_approval"),
                "required_approving_review_count": reviews
                    .get("required_approving_review_count")
                    .and_then(Value::as_u64)
                    .unwrap_or(1),
            }),
        );
    }
    if let Some(r) = p.get("restrictions").filter(|r| !r.is_null()) {
        let names = |key: &str| {
            r.get(key)
                .and_then(Value::as_array)
                .map(|a| {
                    a.iter()
                        .filter_map(Value::as_str)
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_else(Vec::<String>::new)
        };
        m.insert(
            "restrictions".into(),
            json!({
                "url": format!("{url}/restrictions"),
                "users_url": format!("{url}/restrictions/users"),
                "teams_url": format!("{url}/restrictions/teams"),
                "apps_url": format!("{url}/restrictions/apps"),
                "users": names("users").iter().map(|l| account(base, l, 0, false)).collect::<Vec<_>>(),
                "teams": [],
                "apps": [],
            }),
        );
    }
    m.insert(
        "enforce_admins".into(),
        json!({
            "url": format!("{url}/enforce_admins"),
            "enabled": p.get("enforce_admins").and_then(Value::as_bool).unwrap_or(false),
        }),
    );
    m.insert(
        "required_signatures".into(),
        json!({"url": format!("{url}/required_signatures"), "enabled": false}),
    );
    for key in [
        "required_linear_history",
        "allow_force_pushes",
        "allow_deletions",
        "block_creations",
        "required_conversation_resolution",
        "lock_branch",
        "allow_fork_syncing",
    ] {
        m.insert(key.into(), flag(key));
    }
    if !put {
        m.insert("enabled".into(), json!(true));
        m.insert("name".into(), json!(branch));
        m.insert("protection_url".into(), json!(url));
    }
    Value::Object(m)
}

/// A workflow run. `head` is its head commit, when the repository has it.
pub fn run(
    base: &str,
    world: &World,
    r: &RepoRec,
    run: &RunRec,
    head: Option<&CommitRec>,
) -> Value {
    let full = r.full_name();
    let api = format!("{base}/repos/{full}/actions/runs/{}", run.id);
    let workflow_id = r.id % 100_000;
    let file = format!(
        ".github/workflows/{}.yml",
        run.name.to_ascii_lowercase().replace(' ', "-")
    );
    let check_suite_id = run.id + 1;
    let actor = head.map_or_else(
        || user_ref(base, world, &r.owner),
        |c| user_ref(base, world, &c.author),
    );
    let head_commit = head.map_or(Value::Null, |c| {
        let person = json!({
            "name": world.user(&c.author).and_then(|u| u.name.clone()).unwrap_or_else(|| c.author.clone()),
            "email": format!("{}@users.noreply.github.com", c.author),
        });
        json!({
            "id": c.sha,
            "tree_id": tree_sha(c),
            "message": c.message,
            "timestamp": ts(c.date),
            "author": person.clone(),
            "committer": person,
        })
    });
    let repo_v = repo(base, world, r);
    json!({
        "id": run.id,
        "name": run.name,
        "node_id": node_id("WFR", run.id),
        "head_branch": run.head_branch,
        "head_sha": run.head_sha,
        "path": file,
        "display_title": head.map_or_else(|| run.name.clone(), |c| {
            c.message.lines().next().unwrap_or_default().to_owned()
        }),
        "run_number": run.run_number,
        "event": run.event,
        "status": "completed",
        "conclusion": run.conclusion,
        "workflow_id": workflow_id,
        "check_suite_id": check_suite_id,
        "check_suite_node_id": node_id("CS", check_suite_id),
        "url": api,
        "html_url": format!("https://github.com/{full}/actions/runs/{}", run.id),
        "pull_requests": [],
        "created_at": ts(run.created_at),
        "updated_at": ts(run.created_at),
        "actor": actor.clone(),
        "triggering_actor": actor,
        "run_attempt": 1,
        "referenced_workflows": [],
        "run_started_at": ts(run.created_at),
        "jobs_url": format!("{api}/jobs"),
        "logs_url": format!("{api}/logs"),
        "check_suite_url": format!("{base}/repos/{full}/check-suites/{check_suite_id}"),
        "artifacts_url": format!("{api}/artifacts"),
        "cancel_url": format!("{api}/cancel"),
        "rerun_url": format!("{api}/rerun"),
        "previous_attempt_url": Value::Null,
        "workflow_url": format!("{base}/repos/{full}/actions/workflows/{workflow_id}"),
        "head_commit": head_commit,
        "repository": repo_v.clone(),
        "head_repository": repo_v,
    })
}

/// A workflow job.
pub fn job(base: &str, full: &str, run: &RunRec, j: &JobRec) -> Value {
    let step = |number: u64, name: &str, conclusion: &str| {
        json!({
            "name": name, "status": "completed", "conclusion": conclusion, "number": number,
            "started_at": ts(j.started_at), "completed_at": ts(j.completed_at),
        })
    };
    json!({
        "id": j.id,
        "run_id": run.id,
        "run_url": format!("{base}/repos/{full}/actions/runs/{}", run.id),
        "run_attempt": 1,
        "node_id": node_id("CR", j.id),
        "head_sha": run.head_sha,
        "url": format!("{base}/repos/{full}/actions/jobs/{}", j.id),
        "html_url": format!("https://github.com/{full}/actions/runs/{}/job/{}", run.id, j.id),
        "status": "completed",
        "conclusion": j.conclusion,
        "created_at": ts(run.created_at),
        "started_at": ts(j.started_at),
        "completed_at": ts(j.completed_at),
        "name": j.name,
        "steps": [step(1, "Set up job", "success"), step(2, &j.name, j.conclusion)],
        "check_run_url": format!("{base}/repos/{full}/check-runs/{}", j.id),
        "labels": ["ubuntu-latest"],
        "runner_id": 2,
        "runner_name": "GitHub Actions 2",
        "runner_group_id": 2,
        "runner_group_name": "GitHub Actions",
        "workflow_name": run.name,
        "head_branch": run.head_branch,
    })
}

/// GitHub Actions, the app behind every check run of a workflow.
fn actions_app(base: &str) -> Value {
    json!({
        "id": 15368,
        "slug": "github-actions",
        "node_id": "MDM6QXBwMTUzNjg=",
        "owner": account(base, "github", 9919, true),
        "name": "GitHub Actions",
        "description": "Automate your workflow from idea to production",
        "external_url": "https://help.github.com/en/actions",
        "html_url": "https://github.com/apps/github-actions",
        "created_at": "2018-07-30T09:30:17Z",
        "updated_at": "2019-12-10T19:04:12Z",
        "permissions": {"actions": "write", "checks": "write", "contents": "write", "metadata": "read"},
        "events": ["check_run", "check_suite", "push", "pull_request"],
    })
}

/// A check run (a workflow job seen from the Checks API).
pub fn check_run(base: &str, full: &str, run: &RunRec, j: &JobRec) -> Value {
    let api = format!("{base}/repos/{full}/check-runs/{}", j.id);
    let html = format!(
        "https://github.com/{full}/actions/runs/{}/job/{}",
        run.id, j.id
    );
    json!({
        "id": j.id,
        "head_sha": run.head_sha,
        "node_id": node_id("CR", j.id),
        "external_id": format!("{}", j.id),
        "url": api,
        "html_url": html,
        "details_url": html,
        "status": "completed",
        "conclusion": j.conclusion,
        "started_at": ts(j.started_at),
        "completed_at": ts(j.completed_at),
        "output": {
            "title": Value::Null,
            "summary": Value::Null,
            "text": Value::Null,
            "annotations_count": 0,
            "annotations_url": format!("{api}/annotations"),
        },
        "name": j.name,
        "check_suite": {"id": run.id + 1},
        "app": actions_app(base),
        "pull_requests": [],
    })
}
