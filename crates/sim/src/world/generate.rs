//! Generating a world from a configuration: owners, members and teams, their repositories,
//! the fixture scenarios' data and the feed pool; names and shas drawn from a seeded RNG.

use super::*;

/// Project numbers reserved per repository: an owner's projects are numbered
/// `ordinal × PROJECT_SLOTS + 1…`, unique per owner whatever order contents are generated in.
pub(super) const PROJECT_SLOTS: u64 = 4;

/// Sizes of the deep connections of [`SimConfig::deep_repos`]: each beyond one page of 100.
pub mod deep {
    /// Comments on the deep issue.
    pub const COMMENTS: usize = 150;
    /// Commits of the deep pull request.
    pub const COMMITS: usize = 130;
    /// Items of the deep project.
    pub const PROJECT_ITEMS: usize = 120;
}

/// Where generated history starts: a fixed instant, so data does not depend on the wall clock.
pub fn history_anchor() -> Timestamp {
    Timestamp::from_second(1_767_225_600).expect("2026-01-01T00:00:00Z is representable")
}

pub(super) const FIRST: &[&str] = &[
    "ana", "ben", "cleo", "dara", "eli", "fern", "gus", "hana", "ivo", "jun", "kai", "lena",
    "milo", "nia", "omar", "pia", "quin", "rosa", "sami", "tove", "uma", "vik", "wren", "xia",
    "yuri", "zoe",
];
pub(super) const ADJ: &[&str] = &[
    "amber", "brisk", "calm", "dusty", "eager", "fuzzy", "gentle", "hollow", "icy", "jolly",
    "keen", "lunar", "mellow", "nimble", "opal", "proud", "quiet", "rapid", "silent", "tidy",
];
pub(super) const NOUN: &[&str] = &[
    "anchor", "beacon", "cinder", "delta", "ember", "falcon", "garden", "harbor", "island",
    "journal", "kernel", "lantern", "meadow", "nebula", "orbit", "prism", "quarry", "river",
    "summit", "tundra", "vault", "willow",
];
pub(super) const LANGS: &[&str] = &["Rust", "Go", "Python", "TypeScript", "Ruby", "Java", "C"];
pub(super) const LABELS: &[&str] = &["bug", "enhancement", "docs", "good first issue", "question"];
pub(super) const FILES: &[&str] = &[
    "src/main.rs",
    "src/lib.rs",
    "README.md",
    "Cargo.toml",
    "src/api.rs",
    "docs/guide.md",
    "tests/smoke.rs",
    ".github/workflows/ci.yml",
    "src/store.rs",
    "src/config.rs",
];

/// 40 hexadecimal characters.
pub fn random_sha(rng: &mut StdRng) -> String {
    format!(
        "{:016x}{:016x}{:08x}",
        rng.random::<u64>(),
        rng.random::<u64>(),
        rng.random::<u32>()
    )
}

pub(super) fn pick<'a>(rng: &mut StdRng, list: &[&'a str]) -> &'a str {
    list[rng.random_range(0..list.len())]
}

pub(super) fn at(secs: i64) -> Timestamp {
    history_anchor() + SignedDuration::from_secs(secs)
}

/// The fixture feed's three actors and three repositories (ids as in the reference corpus).
pub mod fixture {
    /// (id, login)
    pub const ACTORS: [(u64, &str); 3] = [
        (7_700_419, "octo-ana"),
        (7_700_420, "octo-ben"),
        (7_700_421, "octo-gone"),
    ];
    /// (id, owner, name)
    pub const REPOS: [(u64, &str, &str); 3] = [
        (880_001, "octo-ana", "kiln"),
        (880_002, "octo-ben", "loom"),
        (880_003, "octo-gone", "ember"),
    ];
}

impl World {
    /// Generates the world for a configuration.
    pub fn generate(config: &SimConfig) -> World {
        let mut rng = StdRng::seed_from_u64(config.seed);
        let mut w = World {
            seed: config.seed,
            users: Vec::new(),
            repos: Vec::new(),
            org: OrgRec {
                login: config.org.clone(),
                id: 0,
                members: Vec::new(),
                admins: Vec::new(),
                teams: Vec::new(),
            },
            user_by_login: HashMap::new(),
            user_by_id: HashMap::new(),
            repo_by_name: HashMap::new(),
            repo_by_old_name: HashMap::new(),
            repo_by_id: HashMap::new(),
            contents: HashMap::new(),
            next_id: 90_000_000,
            feed_users: Vec::new(),
            feed_repos: Vec::new(),
            deep_repos: config.deep_repos,
            density: config.density,
        };
        let org_id = 9_100_000 + rng.random_range(0..10_000u64);
        w.org.id = org_id;
        w.add_user(UserRec {
            id: org_id,
            login: config.org.clone(),
            name: Some(format!("{} Inc.", config.org)),
            is_org: true,
            created_at: at(-200 * 86_400),
            deleted: false,
        });

        // Token owners first, so their ids do not depend on the organization's size.
        let mut owners: Vec<String> = Vec::new();
        for t in &config.tokens {
            if let TokenOwner::User(login) = &t.owner
                && !owners.iter().any(|o| o.eq_ignore_ascii_case(login))
            {
                owners.push(login.clone());
            }
        }
        for login in &owners {
            if w.user(login).is_none() {
                let id = 1_000 + (w.users.len() as u64) * 17 + rng.random_range(0..10u64);
                w.add_user(UserRec {
                    id,
                    login: login.clone(),
                    name: None,
                    is_org: false,
                    created_at: at(-300 * 86_400),
                    deleted: false,
                });
            }
        }
        // Members: token owners plus generated people.
        let generated_members = (config.repos / 2 + 4).min(5_000);
        let mut members: Vec<String> = owners.clone();
        for i in 0..generated_members {
            let login = format!("{}-{}{}", pick(&mut rng, FIRST), pick(&mut rng, NOUN), i);
            let id = 2_000_000 + (i as u64) * 13 + rng.random_range(0..13u64);
            w.add_user(UserRec {
                id,
                login: login.clone(),
                name: Some(format!(
                    "{} {}",
                    pick(&mut rng, FIRST),
                    pick(&mut rng, NOUN)
                )),
                is_org: false,
                created_at: at(-(rng.random_range(30..900i64)) * 86_400),
                deleted: false,
            });
            members.push(login);
        }
        w.org.admins = members.iter().take(2).cloned().collect();
        w.add_teams(&mut rng, &members);
        w.org.members = members;

        w.add_org_repos(&mut rng, config);

        w.add_fixture(config.scenario);
        if config.scenario == Scenario::LiveFeed {
            w.add_feed_pool(&mut rng, config.feed_pool);
        }
        w
    }

    /// The organization's teams, one per eight members, each of up to ten of them.
    fn add_teams(&mut self, rng: &mut StdRng, members: &[String]) {
        let team_count = members.len() / 8 + 1;
        for t in 0..team_count {
            let name = format!("{} {}", pick(rng, ADJ), pick(rng, NOUN));
            let slug = format!("{}-{t}", name.replace(' ', "-"));
            let size = rng.random_range(1..=members.len().clamp(1, 10));
            let mut team_members = Vec::new();
            for _ in 0..size {
                let m = members[rng.random_range(0..members.len())].clone();
                if !team_members.contains(&m) {
                    team_members.push(m);
                }
            }
            self.org.teams.push(TeamRec {
                id: 3_000_000 + t as u64 * 7,
                name,
                slug,
                description: "Generated team".to_owned(),
                members: team_members,
            });
        }
    }

    /// The organization's generated repositories; every seventh was renamed once.
    fn add_org_repos(&mut self, rng: &mut StdRng, config: &SimConfig) {
        for i in 0..config.repos {
            let name = format!("{}-{}-{i}", pick(rng, ADJ), pick(rng, NOUN));
            let id = 500_000_000 + (i as u64) * 11 + rng.random_range(0..11u64);
            let created = -(rng.random_range(10..700i64)) * 86_400;
            let mut rec = RepoRec {
                id,
                owner: config.org.clone(),
                name: name.clone(),
                previous_names: Vec::new(),
                searchable_by_old_name: false,
                deleted: false,
                private: rng.random_bool(0.2),
                description: Some(format!("The {} service", name.replace('-', " "))),
                language: Some(pick(rng, LANGS).to_owned()),
                default_branch: "main".to_owned(),
                stars: rng.random_range(0..500),
                created_at: at(created),
                updated_at: at(created + rng.random_range(0..(-created).max(1))),
                generated: true,
                auto_init: false,
            };
            // Every seventh repository was renamed once: the old name answers 301.
            if i % 7 == 3 {
                rec.previous_names
                    .push(format!("{}/old-{}", config.org, name));
            }
            self.add_repo(rec);
        }
    }

    pub(super) fn add_fixture(&mut self, scenario: Scenario) {
        use Scenario as S;
        let actor_gone = !matches!(scenario, S::SearchComplete | S::SearchIncompleteResults);
        for (i, (id, login)) in fixture::ACTORS.iter().enumerate() {
            self.add_user(UserRec {
                id: *id,
                login: (*login).to_owned(),
                name: None,
                is_org: false,
                created_at: at(-400 * 86_400),
                deleted: i == 2 && actor_gone,
            });
        }
        for (i, (id, owner, name)) in fixture::REPOS.iter().enumerate() {
            let mut rec = RepoRec {
                id: *id,
                owner: (*owner).to_owned(),
                name: (*name).to_owned(),
                previous_names: Vec::new(),
                searchable_by_old_name: false,
                deleted: false,
                private: false,
                description: Some(format!("{name}, a fixture repository")),
                language: Some("Rust".to_owned()),
                default_branch: "main".to_owned(),
                stars: 3,
                created_at: at(-100 * 86_400),
                updated_at: at(-86_400),
                generated: true,
                auto_init: false,
            };
            match (i, scenario) {
                (0, S::SearchRenamedRepository) => {
                    rec.previous_names.push(rec.full_name());
                    rec.name = "kiln-forge".to_owned();
                    rec.searchable_by_old_name = true;
                }
                (2, S::RedirectingRepository | S::HostileRedirect) => {
                    // Transferred to octo-ben before octo-gone's account was deleted.
                    rec.previous_names.push(rec.full_name());
                    rec.owner = "octo-ben".to_owned();
                }
                (2, S::SearchComplete | S::SearchIncompleteResults) => {}
                (2, _) => rec.deleted = true,
                _ => {}
            }
            self.add_repo(rec);
        }
    }

    pub(super) fn add_feed_pool(&mut self, rng: &mut StdRng, pool: crate::config::FeedPool) {
        // Every `every`th entity (at offset `at`, as the original fixed pools had it).
        let nth = |i: u64, every: u64, at: u64| every > 0 && i % every == at % every;
        for i in 0..pool.users {
            let login = format!("{}{}-{}", pick(rng, FIRST), pick(rng, NOUN), i);
            let idx = self.add_user(UserRec {
                id: 40_000_000 + i * 31 + rng.random_range(0..31u64),
                login,
                name: None,
                is_org: false,
                created_at: at(-(rng.random_range(30..2000i64)) * 86_400),
                deleted: nth(i, pool.deleted_user_every, 5),
            });
            self.feed_users.push(idx);
        }
        for i in 0..pool.repos {
            let owner_idx = self.feed_users[rng.random_range(0..self.feed_users.len())];
            let owner = self.users[owner_idx].login.clone();
            let name = format!("{}-{}", pick(rng, ADJ), pick(rng, NOUN));
            let mut rec = RepoRec {
                id: 700_000_000 + i * 29 + rng.random_range(0..29u64),
                owner,
                name: format!("{name}-{i}"),
                previous_names: Vec::new(),
                searchable_by_old_name: false,
                deleted: nth(i, pool.deleted_repo_every, 4),
                private: false,
                description: None,
                language: Some(pick(rng, LANGS).to_owned()),
                default_branch: "main".to_owned(),
                stars: rng.random_range(0..50),
                created_at: at(-(rng.random_range(1..900i64)) * 86_400),
                updated_at: at(-86_400),
                generated: true,
                auto_init: false,
            };
            if nth(i, pool.renamed_repo_every, 6) {
                rec.previous_names.push(rec.full_name());
                rec.name = format!("{}-renamed", rec.name);
            }
            let idx = self.add_repo(rec);
            self.feed_repos.push(idx);
        }
    }
}
