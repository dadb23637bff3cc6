//! A recorded feed (`--feed-file`) served as GitHub serves its own: the file's actors and
//! repositories become accounts of the simulated world, so that enrichment finds them by
//! search and by detail URL; the envelopes' `api.github.com` URLs point at this server; and
//! with a replay span (`--feed-replay-secs`) the events surface over time in the order they
//! were created, the recorded span compressed (or stretched) into the replay's, so that an
//! hour of GH Archive plays as a feed hour in a minute.

use headroom_core::clock::{SignedDuration, Timestamp};
use serde_json::Value;

use crate::world::{RepoRec, UserRec, World};

/// Where recorded envelopes say their API lives.
const RECORDED_BASE: &str = "https://api.github.com";

/// Adds every actor and repository of `events` the world does not know yet (by id or by
/// name). They exist at least since the event that names them; their display name and
/// description are made up; a repository's contents start generated, as the organization's do.
pub fn adopt(world: &mut World, events: &[Value]) {
    for event in events {
        let created = created_at(event).unwrap_or(Timestamp::UNIX_EPOCH);
        let actor = &event["actor"];
        if let (Some(id), Some(login)) = (actor["id"].as_u64(), actor["login"].as_str())
            && world.user_by_id(id).is_none()
            && world.user(login).is_none()
        {
            world.add_user(UserRec {
                id,
                login: login.to_owned(),
                // The recording has no display names; one is made up so that an enrichment
                // that applied the account's fields shows.
                name: Some(format!("{login} (recorded)")),
                is_org: false,
                created_at: created,
                deleted: false,
            });
        }
        let repo = &event["repo"];
        let Some((id, full)) = repo["id"].as_u64().zip(repo["name"].as_str()) else {
            continue;
        };
        let Some((owner, name)) = full.split_once('/') else {
            continue;
        };
        if world.repo_by_id(id).is_some() || world.repo(owner, name).is_some() {
            continue;
        }
        world.add_repo(RepoRec {
            id,
            owner: owner.to_owned(),
            name: name.to_owned(),
            previous_names: Vec::new(),
            searchable_by_old_name: false,
            deleted: false,
            private: false,
            description: Some(format!("{full} (recorded)")),
            language: None,
            default_branch: "main".to_owned(),
            stars: 0,
            created_at: created,
            updated_at: created,
            generated: true,
            auto_init: false,
        });
    }
}

/// The envelopes reachable at `now`, newest first, at most `cap`, their URLs on `base`.
/// Without a replay span that is the file as given (taken to be newest first). With one, an
/// event surfaces at `started` plus its offset in the recording scaled to `replay`: the
/// oldest at `started`, the newest at `started + replay`; events without a readable
/// `created_at` surface with the oldest.
pub fn window(
    events: &[Value],
    replay: Option<SignedDuration>,
    started: Timestamp,
    now: Timestamp,
    cap: usize,
    base: &str,
) -> Vec<Value> {
    let chosen: Vec<&Value> = match replay {
        None => events.iter().take(cap).collect(),
        Some(span) => {
            let times: Vec<Option<Timestamp>> = events.iter().map(created_at).collect();
            let oldest = times.iter().flatten().min().copied();
            let newest = times.iter().flatten().max().copied();
            let recorded_ms = match (oldest, newest) {
                (Some(o), Some(n)) => n.duration_since(o).as_millis(),
                _ => 0,
            };
            let surfaces = |t: Option<Timestamp>| -> Timestamp {
                let offset_ms = match (t, oldest) {
                    (Some(t), Some(o)) if recorded_ms > 0 => {
                        let scaled =
                            t.duration_since(o).as_millis() * span.as_millis() / recorded_ms;
                        i64::try_from(scaled).unwrap_or(i64::MAX)
                    }
                    _ => 0,
                };
                started + SignedDuration::from_millis(offset_ms)
            };
            let mut visible: Vec<(Timestamp, usize)> = times
                .iter()
                .enumerate()
                .map(|(i, t)| (surfaces(*t), i))
                .filter(|(at, _)| *at <= now)
                .collect();
            // Newest first; among events that surface together, the later line first (a GH
            // Archive file is oldest first).
            visible.sort_unstable_by(|a, b| b.cmp(a));
            visible
                .into_iter()
                .take(cap)
                .map(|(_, i)| &events[i])
                .collect()
        }
    };
    chosen.into_iter().map(|e| on_base(e, base)).collect()
}

fn created_at(event: &Value) -> Option<Timestamp> {
    event["created_at"].as_str()?.parse().ok()
}

/// `event` with the recorded API base of its actor, repository and organization URLs
/// replaced by `base` (unchanged when they are the same).
fn on_base(event: &Value, base: &str) -> Value {
    let mut event = event.clone();
    let base = base.trim_end_matches('/');
    if base == RECORDED_BASE {
        return event;
    }
    for key in ["actor", "repo", "org"] {
        if let Some(url) = event[key]["url"].as_str()
            && let Some(path) = url.strip_prefix(RECORDED_BASE)
        {
            event[key]["url"] = Value::String(format!("{base}{path}"));
        }
    }
    event
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use serde_json::json;

    fn event(id: u64, at: &str) -> Value {
        json!({
            "id": id.to_string(),
            "created_at": at,
            "actor": {"id": id, "login": format!("u{id}"), "url": format!("https://api.github.com/users/u{id}")},
            "repo": {"id": id + 1000, "name": format!("u{id}/r"), "url": format!("https://api.github.com/repos/u{id}/r")},
        })
    }

    fn ids(events: &[Value]) -> Vec<&str> {
        events.iter().filter_map(|e| e["id"].as_str()).collect()
    }

    fn start() -> Timestamp {
        "2026-12-01T00:00:00Z".parse().expect("a timestamp")
    }

    #[test]
    fn a_replayed_recording_surfaces_in_creation_order_scaled_to_the_span() {
        // Recorded over an hour, oldest first; replayed over 60 s.
        let events = vec![
            event(1, "2026-06-01T15:00:00Z"),
            event(2, "2026-06-01T15:30:00Z"),
            event(3, "2026-06-01T16:00:00Z"),
        ];
        let span = Some(SignedDuration::from_secs(60));
        let at = |s: i64| start() + SignedDuration::from_secs(s);
        let base = "http://127.0.0.1:9";
        assert_eq!(
            ids(&window(&events, span, start(), at(0), 300, base)),
            ["1"]
        );
        assert_eq!(
            ids(&window(&events, span, start(), at(29), 300, base)),
            ["1"]
        );
        assert_eq!(
            ids(&window(&events, span, start(), at(30), 300, base)),
            ["2", "1"]
        );
        assert_eq!(
            ids(&window(&events, span, start(), at(61), 300, base)),
            ["3", "2", "1"]
        );
        assert_eq!(
            ids(&window(&events, span, start(), at(61), 2, base)),
            ["3", "2"]
        );
        let served = window(&events, span, start(), at(61), 300, base);
        assert_eq!(served[0]["actor"]["url"], "http://127.0.0.1:9/users/u3");
        assert_eq!(served[0]["repo"]["url"], "http://127.0.0.1:9/repos/u3/r");
    }

    #[test]
    fn without_a_span_the_file_is_served_as_given() {
        let events = vec![
            event(2, "2026-06-01T15:30:00Z"),
            event(1, "2026-06-01T15:00:00Z"),
        ];
        let served = window(&events, None, start(), start(), 300, RECORDED_BASE);
        assert_eq!(served, events);
    }

    #[test]
    fn the_recordings_accounts_join_the_world_once() {
        let mut world = World::generate(&crate::config::SimConfig::default());
        let users = world.users.len();
        let repos = world.repos.len();
        let events = vec![
            event(900_001, "2026-06-01T15:00:00Z"),
            event(900_001, "2026-06-01T15:01:00Z"),
            event(900_002, "2026-06-01T15:02:00Z"),
        ];
        adopt(&mut world, &events);
        assert_eq!(world.users.len(), users + 2);
        assert_eq!(world.repos.len(), repos + 2);
        assert_eq!(
            world.user_by_id(900_002).map(|u| u.login.as_str()),
            Some("u900002")
        );
        assert!(world.repo("u900001", "r").is_some());
    }

    proptest! {
        /// Whatever the recording, the window is what has surfaced by `now`: it only grows
        /// with time (until the cap), holds no event twice, and ends holding every event.
        #[test]
        fn the_window_only_grows_and_ends_whole(
            offsets in proptest::collection::vec(0i64..7_200, 1..60),
            span_secs in 1i64..600,
            probe in 0i64..700,
        ) {
            let base: Timestamp = "2026-06-01T15:00:00Z".parse().expect("a timestamp");
            let events: Vec<Value> = offsets
                .iter()
                .enumerate()
                .map(|(i, s)| {
                    let at = base + SignedDuration::from_secs(*s);
                    event(i as u64, &at.to_string())
                })
                .collect();
            let span = Some(SignedDuration::from_secs(span_secs));
            let at = |s: i64| start() + SignedDuration::from_secs(s);
            let earlier = window(&events, span, start(), at(probe), 10_000, RECORDED_BASE);
            let later = window(&events, span, start(), at(probe + 1), 10_000, RECORDED_BASE);
            let mut seen = ids(&earlier);
            seen.sort_unstable();
            let before = seen.len();
            seen.dedup();
            prop_assert_eq!(seen.len(), before);
            prop_assert!(ids(&earlier).iter().all(|id| ids(&later).contains(id)));
            let end = window(&events, span, start(), at(span_secs), 10_000, RECORDED_BASE);
            prop_assert_eq!(end.len(), events.len());
        }
    }
}
