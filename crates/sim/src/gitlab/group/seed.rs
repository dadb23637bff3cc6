//! Seeds the group from a [`GitlabGroupSpec`]: groups, then each project's milestones,
//! merge requests (commits, approvals, notes), pipelines (jobs), issues (notes),
//! environments and deployments, releases and feature flags. Deterministic from the seed;
//! every time lies in the past of the clock at seeding, and `updated_at` ≥ `created_at`.

use headroom_core::clock::Timestamp;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::model::*;
use super::spec::GitlabGroupSpec;
use crate::config::{SimConfig, TokenOwner};
use crate::world::{World, random_sha};

const WORDS: &[&str] = &[
    "cache", "parser", "login", "billing", "search", "export", "retry", "metrics", "queue",
    "upload", "schema", "session", "report", "webhook", "audit", "render",
];
const STAGES: &[(&str, &[&str])] = &[
    ("build", &["compile", "assets"]),
    ("test", &["unit", "integration", "lint"]),
    ("deploy", &["review", "release"]),
];
const LABELS: &[&str] = &["bug", "feature", "ops", "docs"];
const ENVIRONMENTS: [&str; 2] = ["production", "staging"];

/// The group's people: every token owner of the simulator (they may read), then a few
/// generated members of the GitHub organization who only author things.
pub(crate) fn members_of(config: &SimConfig, world: &World) -> Vec<Member> {
    let mut members: Vec<Member> = Vec::new();
    for t in &config.tokens {
        if let TokenOwner::User(login) = &t.owner
            && !members
                .iter()
                .any(|m| m.username.eq_ignore_ascii_case(login))
        {
            let (id, name) = world
                .user(login)
                .map(|u| (u.id, u.name.clone().unwrap_or_else(|| u.login.clone())))
                .unwrap_or((0, login.clone()));
            members.push(Member {
                id,
                username: login.clone(),
                name,
                has_token: true,
            });
        }
    }
    for login in world.org.members.iter().take(6) {
        if members
            .iter()
            .any(|m| m.username.eq_ignore_ascii_case(login))
        {
            continue;
        }
        if let Some(u) = world.user(login) {
            members.push(Member {
                id: u.id,
                username: u.login.clone(),
                name: u.name.clone().unwrap_or_else(|| u.login.clone()),
                has_token: false,
            });
        }
    }
    members
}

/// Random draws over the group's timeline.
struct Gen {
    rng: StdRng,
    now: Timestamp,
    members: usize,
}

impl Gen {
    /// A time in `[from, to]`, to the millisecond.
    fn between(&mut self, from: Timestamp, to: Timestamp) -> Timestamp {
        let (a, b) = (
            from.as_millisecond(),
            to.as_millisecond().max(from.as_millisecond()),
        );
        Timestamp::from_millisecond(self.rng.random_range(a..=b)).unwrap_or(from)
    }

    /// `n` sorted creation times in `[from, now - 1 h]`.
    fn times(&mut self, n: usize, from: Timestamp) -> Vec<Timestamp> {
        let end = self.ago_secs(3_600);
        let mut t: Vec<Timestamp> = (0..n).map(|_| self.between(from, end)).collect();
        t.sort();
        t
    }

    /// A moment after `created` and at least a minute before now.
    fn updated(&mut self, created: Timestamp) -> Timestamp {
        let end = self.ago_secs(60).max(created);
        self.between(created, end)
    }

    fn ago_secs(&self, secs: i64) -> Timestamp {
        Timestamp::from_second(self.now.as_second() - secs).unwrap_or(self.now)
    }

    fn member(&mut self) -> usize {
        self.rng.random_range(0..self.members.max(1))
    }

    fn count(&mut self, max: usize) -> usize {
        self.rng.random_range(1..=max.max(1))
    }

    fn word(&mut self) -> &'static str {
        WORDS[self.rng.random_range(0..WORDS.len())]
    }
}

/// Seeds the group `spec` describes.
pub(crate) fn seed(
    spec: &GitlabGroupSpec,
    seed: u64,
    now: Timestamp,
    members: Vec<Member>,
) -> GroupWorld {
    let mut g = Gen {
        rng: StdRng::seed_from_u64(seed ^ 0x6172_6F75_7067_6C31),
        now,
        members: members.len(),
    };
    let mut w = GroupWorld {
        stall_page_every: spec.stall_page_every,
        max_offset: spec.max_offset,
        members,
        ..GroupWorld::default()
    };
    let start = g.ago_secs(i64::from(spec.history_days) * 86_400);
    add_groups(&mut w, &mut g, spec, start);
    for gi in 0..w.groups.len() {
        for k in 0..spec.projects_per_group {
            let project = project(&mut w, &mut g, spec, gi, k, start);
            w.projects.push(project);
        }
    }
    let n = w.projects.len();
    for (i, p) in w.projects.iter_mut().enumerate() {
        let every = spec.feature_flags_forbidden_every;
        p.flags_forbidden = every > 0 && i.is_multiple_of(every);
    }
    let deleted = spec.deleted_after_listing.min(n);
    for k in 0..deleted {
        // Spread over the group: the last project of each of `deleted` equal slices.
        let i = ((k + 1) * n / deleted).saturating_sub(1);
        w.projects[i].deleted_after_listing = true;
    }
    w
}

/// The top group and its subgroups: subgroup `i` sits at level `1 + i % depth`, under the
/// latest group of the level above.
fn add_groups(w: &mut GroupWorld, g: &mut Gen, spec: &GitlabGroupSpec, start: Timestamp) {
    let top_created = g.between(start, start);
    w.groups.push(Group {
        id: w.ids.next(Kind::Group),
        name: spec.path.clone(),
        path: spec.path.clone(),
        full_path: spec.path.clone(),
        parent: None,
        created_at: top_created,
        milestones: Vec::new(),
    });
    let mut latest_at_level = vec![0usize];
    for i in 0..spec.subgroups {
        let level = 1 + i % spec.depth;
        let parent = latest_at_level[level - 1];
        let path = format!("{}-{i}", g.word());
        let created = g.between(w.groups[parent].created_at, g.ago_secs(86_400));
        let full_path = format!("{}/{path}", w.groups[parent].full_path);
        w.groups.push(Group {
            id: w.ids.next(Kind::Group),
            name: path.clone(),
            path,
            full_path,
            parent: Some(parent),
            created_at: created,
            milestones: Vec::new(),
        });
        let me = w.groups.len() - 1;
        if latest_at_level.len() > level {
            latest_at_level[level] = me;
        } else {
            latest_at_level.push(me);
        }
    }
    for gi in 0..w.groups.len() {
        let created = w.groups[gi].created_at;
        w.groups[gi].milestones = milestones(w, g, spec.group_milestones, created);
    }
}

fn milestones(w: &mut GroupWorld, g: &mut Gen, n: usize, from: Timestamp) -> Vec<Milestone> {
    let times = g.times(n, from);
    times
        .into_iter()
        .enumerate()
        .map(|(k, created)| {
            let updated = g.updated(created);
            let due = Timestamp::from_second(created.as_second() + 30 * 86_400).unwrap_or(created);
            Milestone {
                id: w.ids.next(Kind::Milestone),
                iid: k as u64 + 1,
                title: format!("v{}.{k}", 1 + k / 10),
                state: if due < g.now { "closed" } else { "active" },
                created_at: created,
                updated_at: updated,
                start_date: created,
                due_date: due,
            }
        })
        .collect()
}

fn project(
    w: &mut GroupWorld,
    g: &mut Gen,
    spec: &GitlabGroupSpec,
    group: usize,
    k: usize,
    start: Timestamp,
) -> Project {
    let from = start.max(w.groups[group].created_at);
    let created = g.between(from, g.ago_secs(2 * 86_400).max(from));
    let path = format!("{}-{}-{k}", g.word(), w.groups[group].path);
    let milestones = milestones(w, g, spec.milestones_per_project, created);
    let n_milestones = milestones.len();
    let mut p = Project {
        id: w.ids.next(Kind::Project),
        name: path.clone(),
        path,
        group,
        created_at: created,
        flags_forbidden: false,
        deleted_after_listing: false,
        deleted: false,
        merge_requests: Vec::new(),
        pipelines: Vec::new(),
        issues: Vec::new(),
        milestones,
        environments: Vec::new(),
        deployments: Vec::new(),
        releases: Vec::new(),
        feature_flags: Vec::new(),
    };
    for t in g.times(spec.merge_requests_per_project, created) {
        let iid = p.merge_requests.len() as u64 + 1;
        let mr = merge_request(w, g, spec, iid, t, n_milestones);
        p.merge_requests.push(mr);
    }
    for t in g.times(spec.pipelines_per_project, created) {
        let iid = p.pipelines.len() as u64 + 1;
        let pipeline = pipeline(w, g, spec, iid, t);
        p.pipelines.push(pipeline);
    }
    for t in g.times(spec.issues_per_project, created) {
        let iid = p.issues.len() as u64 + 1;
        let issue = issue(w, g, spec, iid, t, n_milestones);
        p.issues.push(issue);
    }
    add_deployments(w, g, spec, &mut p);
    add_releases_and_flags(w, g, spec, &mut p);
    p
}

/// `n` notes between `from` and `to`, the first a system note.
fn notes(w: &mut GroupWorld, g: &mut Gen, n: usize, from: Timestamp, to: Timestamp) -> Vec<Note> {
    let mut times: Vec<Timestamp> = (0..n).map(|_| g.between(from, to)).collect();
    times.sort();
    times
        .into_iter()
        .enumerate()
        .map(|(k, at)| {
            let system = k == 0 || g.rng.random_bool(0.3);
            let body = if system {
                [
                    "added 1 commit",
                    "changed the description",
                    "mentioned in commit",
                ][g.rng.random_range(0..3)]
                .to_owned()
            } else {
                format!("Looks fine, but check the {} path.", g.word())
            };
            Note {
                id: w.ids.next(Kind::Note),
                body,
                author: g.member(),
                system,
                created_at: at,
                updated_at: at,
            }
        })
        .collect()
}

fn merge_request(
    w: &mut GroupWorld,
    g: &mut Gen,
    spec: &GitlabGroupSpec,
    iid: u64,
    created: Timestamp,
    n_milestones: usize,
) -> MergeRequest {
    let updated = g.updated(created);
    let roll = g.rng.random_range(0..100);
    let state = match roll {
        0..60 => "merged",
        60..75 => "closed",
        _ => "opened",
    };
    let author = g.member();
    let word = g.word();
    let mut commits: Vec<Commit> = Vec::new();
    for _ in 0..g.count(spec.max_commits_per_merge_request) {
        let at = g.between(created, updated);
        let parent_id = commits.last().map(|c| c.id.clone());
        commits.push(Commit {
            id: random_sha(&mut g.rng),
            parent_id,
            title: format!("Improve {word} handling"),
            author,
            created_at: at,
        });
    }
    commits.sort_by_key(|c| c.created_at);
    let approvers = g.rng.random_range(0..=2usize.min(g.members));
    let approved_by: Vec<usize> = (0..approvers)
        .map(|k| (author + 1 + k) % g.members.max(1))
        .filter(|&m| m != author)
        .collect();
    let n_notes = g.count(spec.max_notes);
    let notes = notes(w, g, n_notes, created, updated);
    let finished = state != "opened";
    MergeRequest {
        id: w.ids.next(Kind::MergeRequest),
        iid,
        title: format!("Fix {word} edge case"),
        state,
        author,
        source_branch: format!("fix/{word}-{iid}"),
        target_branch: "main".to_owned(),
        merge_commit_sha: (state == "merged").then(|| random_sha(&mut g.rng)),
        created_at: created,
        updated_at: updated,
        merged_at: (state == "merged").then_some(updated),
        closed_at: (state == "closed").then_some(updated),
        finished_by: finished.then(|| g.member()),
        commits,
        approved_by,
        notes,
        milestone: pick_milestone(g, n_milestones),
    }
}

fn pick_milestone(g: &mut Gen, n: usize) -> Option<usize> {
    (n > 0 && g.rng.random_bool(0.5)).then(|| g.rng.random_range(0..n))
}

fn pipeline(
    w: &mut GroupWorld,
    g: &mut Gen,
    spec: &GitlabGroupSpec,
    iid: u64,
    created: Timestamp,
) -> Pipeline {
    let status = ["success", "success", "success", "failed", "canceled"][g.rng.random_range(0..5)];
    let source = ["push", "merge_request_event", "schedule"][g.rng.random_range(0..3)];
    let mut at = created;
    let mut jobs = Vec::new();
    for k in 0..g.count(spec.max_jobs_per_pipeline) {
        let (stage, names) = STAGES[k % STAGES.len()];
        let started = Timestamp::from_second(at.as_second() + 5).unwrap_or(at);
        let finished = Timestamp::from_second(started.as_second() + g.rng.random_range(20..600))
            .unwrap_or(started);
        jobs.push(Job {
            id: w.ids.next(Kind::Job),
            name: format!("{}-{k}", names[k % names.len()]),
            stage,
            status,
            created_at: created,
            started_at: started,
            finished_at: finished,
        });
        at = finished;
    }
    Pipeline {
        id: w.ids.next(Kind::Pipeline),
        iid,
        sha: random_sha(&mut g.rng),
        reference: "main".to_owned(),
        status,
        source,
        user: g.member(),
        created_at: created,
        updated_at: at.min(g.ago_secs(60)).max(created),
        jobs,
    }
}

fn issue(
    w: &mut GroupWorld,
    g: &mut Gen,
    spec: &GitlabGroupSpec,
    iid: u64,
    created: Timestamp,
    n_milestones: usize,
) -> Issue {
    let updated = g.updated(created);
    let closed = g.rng.random_bool(0.5);
    let n_notes = g.count(spec.max_notes);
    let notes = notes(w, g, n_notes, created, updated);
    let word = g.word();
    Issue {
        id: w.ids.next(Kind::Issue),
        iid,
        title: format!("The {word} page is slow"),
        state: if closed { "closed" } else { "opened" },
        author: g.member(),
        created_at: created,
        updated_at: updated,
        closed_at: closed.then_some(updated),
        closed_by: closed.then(|| g.member()),
        notes,
        milestone: pick_milestone(g, n_milestones),
        labels: vec![LABELS[g.rng.random_range(0..LABELS.len())]],
    }
}

fn add_deployments(w: &mut GroupWorld, g: &mut Gen, spec: &GitlabGroupSpec, p: &mut Project) {
    if spec.deployments_per_project == 0 {
        return;
    }
    for name in ENVIRONMENTS {
        p.environments.push(Environment {
            id: w.ids.next(Kind::Environment),
            name,
            created_at: p.created_at,
        });
    }
    for (k, created) in g
        .times(spec.deployments_per_project, p.created_at)
        .into_iter()
        .enumerate()
    {
        let updated = g.updated(created);
        let status = ["success", "success", "failed", "canceled"][g.rng.random_range(0..4)];
        p.deployments.push(Deployment {
            id: w.ids.next(Kind::Deployment),
            iid: k as u64 + 1,
            reference: "main".to_owned(),
            sha: random_sha(&mut g.rng),
            status,
            user: g.member(),
            environment: k % ENVIRONMENTS.len(),
            created_at: created,
            updated_at: updated,
            finished_at: Some(updated),
        });
    }
}

fn add_releases_and_flags(
    w: &mut GroupWorld,
    g: &mut Gen,
    spec: &GitlabGroupSpec,
    p: &mut Project,
) {
    for (k, created) in g
        .times(spec.releases_per_project, p.created_at)
        .into_iter()
        .enumerate()
    {
        p.releases.push(Release {
            tag_name: format!("v1.{k}.0"),
            name: format!("Release 1.{k}"),
            sha: random_sha(&mut g.rng),
            author: g.member(),
            created_at: created,
            released_at: created,
            milestone: (k < p.milestones.len()).then_some(k),
        });
    }
    for (k, created) in g
        .times(spec.feature_flags_per_project, p.created_at)
        .into_iter()
        .enumerate()
    {
        let updated = g.updated(created);
        let word = g.word();
        p.feature_flags.push(FeatureFlag {
            name: format!("{word}_rollout_{k}"),
            active: g.rng.random_bool(0.7),
            strategy_id: w.ids.next(Kind::Strategy),
            scope_id: w.ids.next(Kind::Strategy),
            created_at: created,
            updated_at: updated,
        });
    }
}
