//! The public events feed: the scripted fixture pages of the scenario matrix, and a generated
//! feed that keeps growing (`live_feed`).

use headroom_core::clock::{SignedDuration, Timestamp};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{Value, json};

use crate::render::{self, ts};
use crate::world::{CommentRec, IssueRec, UserRec, World, fixture, random_sha};

/// A page of the feed as the handler serves it.
#[derive(Debug, Clone)]
pub struct FeedPage {
    /// Envelopes, in the order served.
    pub events: Vec<Value>,
    /// The number of the last page, for `rel="last"`; `None` when this page has no `next`.
    pub last_page: Option<u64>,
    /// Whether a `next` link is present.
    pub has_next: bool,
}

fn actor(base: &str, id: u64, login: &str) -> Value {
    json!({
        "id": id,
        "login": login,
        "display_login": login,
        "gravatar_id": "",
        "url": format!("{base}/users/{login}"),
        "avatar_url": format!("https://avatars.githubusercontent.com/u/{id}?"),
    })
}

fn repo_ref(base: &str, id: u64, full: &str) -> Value {
    json!({"id": id, "name": full, "url": format!("{base}/repos/{full}")})
}

/// Which fixture envelope to build.
#[derive(Debug, Clone, Copy)]
enum Kind {
    Push,
    PushMissingHead,
    PushBadHead,
    Watch,
    NoType,
}

fn fixture_event(
    base: &str,
    id: u64,
    kind: Kind,
    actor_i: usize,
    repo_i: usize,
    minute: i64,
) -> Value {
    let (aid, login) = fixture::ACTORS[actor_i];
    let (rid, owner, name) = fixture::REPOS[repo_i];
    let full = format!("{owner}/{name}");
    let mut rng = StdRng::seed_from_u64(id);
    let created = Timestamp::from_second(1_785_512_400 + minute * 60)
        .expect("a fixed instant in 2026 is representable");
    let head = random_sha(&mut rng);
    let before = random_sha(&mut rng);
    let push_id = 37_000_000_000 + id % 1_000_000;
    let payload = match kind {
        Kind::Push | Kind::NoType => json!({
            "repository_id": rid, "push_id": push_id, "ref": "refs/heads/main", "head": head, "before": before,
        }),
        Kind::PushMissingHead => json!({
            "repository_id": rid, "push_id": push_id, "ref": "refs/heads/main", "before": before,
        }),
        Kind::PushBadHead => json!({
            "repository_id": rid, "push_id": push_id, "ref": "refs/heads/main",
            "head": "not-a-valid-object-name", "before": before,
        }),
        Kind::Watch => json!({"action": "started"}),
    };
    let mut v = json!({
        "id": id.to_string(),
        "type": match kind { Kind::Watch => "WatchEvent", _ => "PushEvent" },
        "actor": actor(base, aid, login),
        "repo": repo_ref(base, rid, &full),
        "payload": payload,
        "public": true,
        "created_at": ts(created),
    });
    if let (Kind::NoType, Value::Object(m)) = (kind, &mut v) {
        m.remove("type");
    }
    v
}

/// The `default` page: 8 envelopes — 4 valid pushes (3 actors, 3 repositories), 1 WatchEvent,
/// 3 malformed (missing head; head not an object name; no type). Ids out of order.
pub fn default_page(base: &str) -> Vec<Value> {
    use Kind::*;
    vec![
        fixture_event(base, 58_000_000_002, Push, 1, 1, 7),
        fixture_event(base, 58_000_000_008, Push, 2, 2, 8),
        fixture_event(base, 58_000_000_001, Push, 0, 0, 6),
        fixture_event(base, 58_000_000_005, PushMissingHead, 0, 0, 5),
        fixture_event(base, 58_000_000_003, Watch, 1, 0, 4),
        fixture_event(base, 58_000_000_007, NoType, 1, 1, 3),
        fixture_event(base, 58_000_000_006, PushBadHead, 0, 1, 2),
        fixture_event(base, 58_000_000_004, Push, 0, 1, 1),
    ]
}

/// The `paginated` walk: page 1 has 6 envelopes, page 2 has 5 (its first repeats page 1's
/// first), page 3 is empty. Across the walk: 6 distinct valid pushes, 1 duplicate, 3 malformed,
/// 1 WatchEvent.
pub fn paginated_page(base: &str, page: u64) -> FeedPage {
    use Kind::*;
    let first = fixture_event(base, 58_000_000_014, Push, 0, 0, 20);
    match page {
        1 => FeedPage {
            events: vec![
                first,
                fixture_event(base, 58_000_000_012, Push, 1, 1, 19),
                fixture_event(base, 58_000_000_016, Watch, 1, 0, 18),
                fixture_event(base, 58_000_000_011, Push, 0, 1, 17),
                fixture_event(base, 58_000_000_015, PushMissingHead, 0, 0, 16),
                fixture_event(base, 58_000_000_013, Push, 2, 2, 15),
            ],
            last_page: Some(3),
            has_next: true,
        },
        2 => FeedPage {
            events: vec![
                first,
                fixture_event(base, 58_000_000_018, Push, 0, 0, 14),
                fixture_event(base, 58_000_000_020, NoType, 1, 1, 13),
                fixture_event(base, 58_000_000_017, Push, 1, 0, 12),
                fixture_event(base, 58_000_000_019, PushBadHead, 1, 1, 11),
            ],
            last_page: Some(3),
            has_next: true,
        },
        _ => FeedPage {
            events: Vec::new(),
            last_page: None,
            has_next: false,
        },
    }
}

/// The `paginated_final_page` walk: the default page's envelopes over two pages; the second
/// has no `next` link.
pub fn final_page_walk(base: &str, page: u64) -> FeedPage {
    let all = default_page(base);
    match page {
        1 => FeedPage {
            events: all[..4].to_vec(),
            last_page: Some(2),
            has_next: true,
        },
        2 => FeedPage {
            events: all[4..].to_vec(),
            last_page: None,
            has_next: false,
        },
        _ => FeedPage {
            events: Vec::new(),
            last_page: None,
            has_next: false,
        },
    }
}

/// Seconds between two events of the generated feed.
pub const LIVE_SPACING_SECS: i64 = 2;
/// Events created before the simulator started (seven hours of them, so that events delayed
/// by up to six hours are already surfacing at start).
pub const LIVE_BACKLOG: u64 = 12_600;

/// How many generated events have been created by `now`.
pub fn live_count(start: Timestamp, now: Timestamp) -> u64 {
    let elapsed = now.duration_since(start).as_secs().max(0);
    LIVE_BACKLOG + (elapsed / LIVE_SPACING_SECS) as u64
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// When generated event `k` was created.
pub fn live_created_at(start: Timestamp, k: u64) -> Timestamp {
    start + SignedDuration::from_secs((k as i64 - LIVE_BACKLOG as i64) * LIVE_SPACING_SECS)
}

/// Seconds between event `k`'s creation and its appearance in the feed. GitHub documents
/// 30 s to 6 h: most arrive within a minute, some within minutes, a few hours late.
pub fn live_delay_secs(seed: u64, k: u64) -> i64 {
    let h = splitmix(seed ^ k.wrapping_mul(0xD6E8_FEB8_6659_FD93));
    let r = (h >> 8) as i64;
    match h % 100 {
        0..90 => 30 + r % 31,
        90..98 => 60 + r % 540,
        _ => 3_600 + r % 18_001,
    }
}

/// The issue an issue event of the generated feed is about (number `1 + k % 200`).
fn feed_issue(user: &UserRec, k: u64, created: Timestamp) -> IssueRec {
    IssueRec {
        id: 2_000_000_000 + k,
        number: 1 + k % 200,
        title: "Generated issue".to_owned(),
        body: "Generated by headroom-sim (live feed).".to_owned(),
        open: true,
        user: user.login.clone(),
        labels: Vec::new(),
        created_at: created,
        updated_at: created,
        comments: Vec::new(),
        pull: None,
    }
}

/// Generated event number `k` (0 = oldest). Deterministic for a seed.
pub fn live_event(base: &str, world: &World, seed: u64, start: Timestamp, k: u64) -> Value {
    let mut rng = StdRng::seed_from_u64(seed ^ k.wrapping_mul(0xA076_1D64_78BD_642F));
    let created = live_created_at(start, k);
    let user = &world.users[world.feed_users[rng.random_range(0..world.feed_users.len())]];
    let repo = &world.repos[world.feed_repos[rng.random_range(0..world.feed_repos.len())]];
    // Events recorded before a rename still carry the old name.
    let repo_name = repo
        .previous_names
        .first()
        .cloned()
        .unwrap_or_else(|| repo.full_name());
    let roll = rng.random_range(0..100);
    // Two id sequences, as on GitHub: push/create/delete and everything else.
    let push_family = roll < 73;
    let id = if push_family {
        60_000_000_000 + k * 5 + rng.random_range(0..5u64)
    } else {
        12_500_000_000 + k * 3 + rng.random_range(0..3u64)
    };
    let branch = format!(
        "refs/heads/{}",
        if rng.random_bool(0.7) {
            "main".to_owned()
        } else {
            format!("topic-{}", k % 17)
        }
    );
    let (kind, payload) = match roll {
        0..60 => (
            "PushEvent",
            json!({
                "repository_id": repo.id,
                "push_id": 37_500_000_000 + k * 7,
                "ref": branch,
                "head": random_sha(&mut rng),
                "before": random_sha(&mut rng),
            }),
        ),
        60..70 => (
            "CreateEvent",
            json!({"ref": format!("topic-{}", k % 17), "ref_type": "branch", "full_ref": branch, "master_branch": "main", "description": Value::Null, "pusher_type": "user"}),
        ),
        70..73 => (
            "DeleteEvent",
            json!({"ref": format!("topic-{}", k % 17), "ref_type": "branch", "full_ref": branch, "pusher_type": "user"}),
        ),
        73..83 => ("WatchEvent", json!({"action": "started"})),
        83..91 => {
            let number = 1 + k % 300;
            let action = ["opened", "closed", "merged"][rng.random_range(0..3)];
            (
                "PullRequestEvent",
                json!({
                    "action": action,
                    "number": number,
                    "pull_request": {
                        "url": format!("{base}/repos/{repo_name}/pulls/{number}"),
                        "id": 3_000_000_000u64 + k,
                        "number": number,
                        "head": {"ref": format!("topic-{}", k % 17), "sha": random_sha(&mut rng), "repo": {"id": repo.id, "url": format!("{base}/repos/{repo_name}"), "name": repo.name}},
                        "base": {"ref": "main", "sha": random_sha(&mut rng), "repo": {"id": repo.id, "url": format!("{base}/repos/{repo_name}"), "name": repo.name}},
                    }
                }),
            )
        }
        // Issue payloads carry whole REST issue and comment objects, as GitHub's do.
        91..96 => (
            "IssuesEvent",
            json!({"action": "opened", "issue": render::issue(base, world, repo, &feed_issue(user, k, created))}),
        ),
        _ => {
            let issue = feed_issue(user, k, created);
            let comment = CommentRec {
                id: 4_000_000_000u64 + k,
                user: user.login.clone(),
                body: "Generated comment".to_owned(),
                created_at: created,
            };
            (
                "IssueCommentEvent",
                json!({
                    "action": "created",
                    "issue": render::issue(base, world, repo, &issue),
                    "comment": render::comment(base, world, repo, issue.number, &comment),
                }),
            )
        }
    };
    json!({
        "id": id.to_string(),
        "type": kind,
        "actor": actor(base, user.id, &user.login),
        "repo": repo_ref(base, repo.id, &repo_name),
        "payload": payload,
        "public": true,
        "created_at": ts(created),
    })
}

/// The reachable window of the generated feed at `now`: the `cap` events that surfaced most
/// recently, newest first. Because events surface after different delays, a late event appears
/// beside much newer ones and ids are out of order.
pub fn live_window(
    base: &str,
    world: &World,
    seed: u64,
    start: Timestamp,
    now: Timestamp,
    cap: usize,
) -> Vec<Value> {
    let count = live_count(start, now);
    let oldest = count.saturating_sub(LIVE_BACKLOG);
    let mut visible: Vec<(Timestamp, u64)> = (oldest..count)
        .filter_map(|k| {
            let at =
                live_created_at(start, k) + SignedDuration::from_secs(live_delay_secs(seed, k));
            (at <= now).then_some((at, k))
        })
        .collect();
    visible.sort_unstable_by(|a, b| b.cmp(a));
    visible
        .into_iter()
        .take(cap)
        .map(|(_, k)| live_event(base, world, seed, start, k))
        .collect()
}
