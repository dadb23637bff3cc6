//! `sync status [RUN_ID] [--json]`: a run's stages, cursors, counts and what it waits for —
//! and, for a run that waits, whether this process's credential can resume it and whether
//! any live process does (see [`super::unresumed`]), with the command that will.

use headroom_core::clock::{Clock, Timestamp, TokioClock};
use headroom_server::status::resume::{Resumer, Unresumed};
use headroom_store::{CheckpointStatus, StoreRead, SyncRun, TABLES};
use headroom_sync::summary::{Calibration, StageStatus};
use headroom_sync::{CalibrationRow, ClockSkew, RunSummary};
use serde::Serialize;

use super::unresumed::{self, Hint};
use crate::config::Settings;
use crate::outcome::{CliError, CommandResult, Outcome};

#[derive(Debug, Serialize)]
struct StageLine {
    stage: String,
    title: String,
    position: usize,
    status: StageStatus,
    detail: Option<String>,
    cursor: Option<String>,
    repositories_done: usize,
    repositories: usize,
    pages: u64,
    rows: u64,
}

#[derive(Debug, Serialize)]
struct RunStatus {
    run: SyncRun,
    waiting_for: Option<String>,
    stages: Vec<StageLine>,
    /// Fields GitHub refused in answers the stages kept (from the run's summary).
    refused: Vec<headroom_sync::RefusedField>,
    /// Estimated against actual per stage and route family, and for the run (from its
    /// summary).
    calibration: Calibration,
    /// The provider's `Date` against this machine's clock (from its summary).
    clock_skew: Option<ClockSkew>,
    tables: std::collections::BTreeMap<String, u64>,
    /// Why this process's credential cannot resume the run, and the command that will
    /// (`None`: it can, or the run does not wait).
    this_credential: Option<Hint>,
    /// Why no live process resumes the run, and the command that will (`None`: one does, or
    /// may still).
    unresumed: Option<Unresumed>,
}

async fn describe(
    store: &dyn StoreRead,
    run: SyncRun,
) -> Result<RunStatus, headroom_store::StoreError> {
    let checkpoints = store.checkpoints(run.id).await?;
    let kind = super::SyncKind::named(&run.kind).unwrap_or(super::SyncKind::Org);
    let repositories = checkpoints
        .iter()
        .filter(|c| Some(c.stage.as_str()) == kind.source() && !c.scope.is_empty())
        .count();
    let mut stages = Vec::new();
    for (i, decl) in kind.declarations().iter().enumerate() {
        let mine: Vec<_> = checkpoints
            .iter()
            .filter(|c| c.stage == decl.name)
            .collect();
        let top = mine.iter().find(|c| c.scope.is_empty());
        let state = headroom_sync::runner::state_of(top.copied());
        let status = StageStatus::from(&state);
        stages.push(StageLine {
            stage: decl.name.to_owned(),
            title: decl.title.to_owned(),
            position: i + 1,
            status,
            detail: top.and_then(|c| c.detail.clone()),
            cursor: top.and_then(|c| c.page_cursor.clone()),
            repositories_done: mine
                .iter()
                .filter(|c| {
                    headroom_sync::RepoScope::parse(&c.scope).is_some()
                        && c.status == CheckpointStatus::Done
                })
                .count(),
            repositories,
            pages: mine.iter().map(|c| c.pages_done).sum(),
            rows: mine.iter().map(|c| c.rows_written).sum(),
        });
    }
    let mut tables = std::collections::BTreeMap::new();
    for t in TABLES {
        // A GitLab, Jira or Linear run's tables are its provider's; an organization run's,
        // GitHub's.
        if kind != super::SyncKind::Org {
            if kind.owns_table(t) {
                tables.insert((*t).to_owned(), store.count_rows(t).await?);
            }
            continue;
        }
        if matches!(
            *t,
            "organizations"
                | "organization_members"
                | "teams"
                | "repositories"
                | "issues"
                | "issue_comments"
                | "projects"
                | "pull_requests"
                | "pull_request_commits"
                | "commit_files"
                | "workflow_runs"
                | "workflow_jobs"
                | "check_runs"
                | "branches"
        ) {
            tables.insert((*t).to_owned(), store.count_rows(t).await?);
        }
    }
    let waiting_for = match run.status {
        headroom_store::SyncRunStatus::Hibernating => run.not_before.map(|t| {
            let deferred: Vec<&str> = stages
                .iter()
                .filter(|s| s.status == StageStatus::Deferred)
                .map(|s| s.stage.as_str())
                .collect();
            format!(
                "wakes at {t}; deferred: {}",
                if deferred.is_empty() {
                    "none".to_owned()
                } else {
                    deferred.join(", ")
                }
            )
        }),
        _ => None,
    };
    let summary = RunSummary::from_stored(run.summary.as_ref());
    Ok(RunStatus {
        run,
        waiting_for,
        stages,
        refused: summary.refused,
        calibration: summary.calibration,
        clock_skew: summary.clock_skew,
        tables,
        this_credential: None,
        unresumed: None,
    })
}

/// One refused field in words: which stage asked for what, and GitHub's reason.
fn refused_line(r: &headroom_sync::RefusedField) -> String {
    let path = if r.path.is_empty() {
        "(no path)"
    } else {
        r.path.as_str()
    };
    // Recorded redacted; redacted again in case a summary was written by an older build.
    format!(
        "refused: {} · {path} — {}: {}",
        r.stage,
        r.kind,
        headroom_core::redact(&r.message)
    )
}

/// Which credential the run spends, in words: its owner and fingerprint (never the token),
/// and the rebinds recorded. `None` for a run created before bindings were recorded and not
/// resumed since.
fn binding_line(b: &headroom_store::CredentialBinding) -> Option<String> {
    if let Some(f) = b.owner_pending() {
        return Some(format!(
            "credential: fingerprint {f}, its owner not known yet (learned when the run wakes)"
        ));
    }
    let owner = b.owner.as_deref()?;
    let mut line = match &b.fingerprint {
        Some(f) => format!("credential: {owner}, fingerprint {f}"),
        None => format!("credential: {owner}, unauthenticated"),
    };
    if b.rebind_count > 0 {
        let from = b.rebound_from.as_deref().unwrap_or("none");
        let at = b.rebound_at.map(|t| format!(" at {t}")).unwrap_or_default();
        line.push_str(&format!(
            " · rebound {} time{} (latest{at}, from fingerprint {from})",
            b.rebind_count,
            if b.rebind_count == 1 { "" } else { "s" }
        ));
    }
    Some(line)
}

/// The provider's clock in words, with the reset margin that would cover it.
fn skew_line(skew: &ClockSkew) -> String {
    let secs = |ms: i64| format!("{:+.1} s", ms as f64 / 1000.0);
    format!(
        "provider clock (Date header) vs this machine: {} latest, {} to {} over {} responses \
         (whole seconds, so in step reads up to -1 s); a reset margin of {} s covers it \
         (--reset-margin-secs, 60 by default)",
        secs(skew.last_ms),
        secs(skew.min_ms),
        secs(skew.max_ms),
        skew.samples,
        skew.covering_margin_secs()
    )
}

/// The calibration table: one line per stage and route family, then the run's totals. Raw
/// numbers side by side; a ratio only where a request count is comparable with the estimate.
fn calibration_lines(c: &Calibration) -> Vec<String> {
    if c.run.is_empty() && c.stages.is_empty() {
        return Vec::new();
    }
    let mut out = vec![
        "calibration (estimated units vs actual, per route family):".to_owned(),
        format!(
            "  {:<16} {:<16} {:<13} {:>9} {:>9} {:>9} {:>6}  note",
            "stage", "family", "dimension", "estimated", "requests", "points", "ratio"
        ),
    ];
    let line = |stage: &str, r: &CalibrationRow| {
        let mut notes = Vec::new();
        if r.unbudgeted_actual {
            notes.push("unbudgeted".to_owned());
        } else if r.underestimated {
            notes.push("UNDERESTIMATED".to_owned());
        }
        if let Some(why) = &r.underestimation_assessable_reason {
            notes.push(format!("not assessable: {why}"));
        }
        if r.incomplete {
            notes.push("incomplete".to_owned());
        }
        format!(
            "  {stage:<16} {:<16} {:<13} {:>9} {:>9} {:>9} {:>6}  {}",
            r.family,
            r.dimension.as_str(),
            if r.unbudgeted_actual {
                "-".to_owned()
            } else {
                r.estimated_units.to_string()
            },
            r.actual_requests,
            r.actual_points,
            r.ratio.map_or("-".to_owned(), |x| format!("{x:.2}")),
            notes.join("; ")
        )
        .trim_end()
        .to_owned()
    };
    let kind = super::kind::declaring(c.stages.keys().map(String::as_str));
    for decl in kind.declarations() {
        for r in c.stages.get(decl.name).into_iter().flatten() {
            out.push(line(decl.name, r));
        }
    }
    for r in &c.run {
        out.push(line("(run)", r));
    }
    out
}

/// The process `settings` describe, as one that could resume a run.
async fn resumer(settings: &Settings, store: &dyn StoreRead) -> Resumer {
    Resumer {
        host: settings.policy.host().to_owned(),
        owner: crate::serve::stored_subject(settings, store)
            .await
            .unwrap_or_default(),
        fingerprint: settings
            .credential
            .as_ref()
            .map(|c| c.fingerprint().to_owned()),
        rebind: false,
    }
}

/// This process's credential per kind of run, GitHub's (for organization runs, and any run
/// whose provider has none configured) first.
async fn resumers(settings: &Settings, store: &dyn StoreRead) -> Vec<(&'static str, Resumer)> {
    let mut out = vec![(
        super::SyncKind::Org.as_str(),
        resumer(settings, store).await,
    )];
    for kind in super::SyncKind::OTHERS {
        if let Some(provider) = super::configured_for(settings, kind) {
            out.push((kind.as_str(), resumer(&provider, store).await));
        }
    }
    out
}

pub(super) async fn status(settings: &Settings, run_id: Option<i64>, json: bool) -> CommandResult {
    settings
        .require_existing_database()
        .map_err(|e| CliError::refused(&e))?;
    // Read-only: it works on a database in a read-only directory and never changes one.
    let stores = crate::serve::open_read_only(&settings.db).await?;
    let store = stores.store;
    let runs = match run_id {
        Some(id) => match store.sync_run(id).await {
            Ok(Some(run)) => vec![run],
            Ok(None) => return Err(CliError::refused(&format!("no sync run {id}"))),
            Err(e) => return Err(CliError::failed(&e)),
        },
        None => store
            .due_sync_runs(Timestamp::MAX, 50)
            .await
            .map_err(|e| CliError::failed(&e))?,
    };
    let now = TokioClock::system().now();
    // This process's credential, as a process that could resume a run (it does not: it only
    // says whether it could, and how): GitHub's for an organization run, its provider's for
    // another.
    let resumers = resumers(settings, store.as_ref()).await;
    let mut out = Vec::new();
    for run in runs {
        let mine = resumers
            .iter()
            .find(|(kind, _)| *kind == run.kind)
            .or_else(|| resumers.first())
            .map(|(_, r)| r)
            .ok_or_else(|| CliError::failed(&"no credential to compare runs with"))?;
        let this_credential = unresumed::mine(&run, mine, now);
        let nobody = unresumed::nobody(stores.history.as_ref(), &run, now)
            .await
            .map_err(|e| CliError::failed(&e))?;
        match describe(store.as_ref(), run).await {
            Ok(s) => out.push(RunStatus {
                this_credential,
                unresumed: nobody,
                ..s
            }),
            Err(e) => return Err(CliError::failed(&e)),
        }
    }
    if json {
        match serde_json::to_string_pretty(&out) {
            Ok(text) => outln!("{text}"),
            Err(e) => return Err(CliError::failed(&e)),
        }
        return Ok(Outcome::Success);
    }
    if out.is_empty() {
        outln!("no unfinished sync runs");
    }
    for s in &out {
        outln!(
            "run {} · {} {} · {}{}",
            s.run.id,
            s.run.kind,
            s.run.target,
            s.run.status.as_str(),
            s.waiting_for
                .as_ref()
                .map(|w| format!(" · {w}"))
                .unwrap_or_default()
        );
        if let Some(reason) = &s.run.failure_reason {
            outln!("  failed: {reason}");
        }
        if let Some(line) = binding_line(&s.run.credential) {
            outln!("  {line}");
        }
        if let Some(u) = &s.unresumed {
            outln!("  {} Resume it with {}.", u.why, u.command);
        }
        if let Some(h) = &s.this_credential {
            outln!(
                "  your credential cannot resume it: {}; run {}",
                h.why,
                h.command
            );
        }
        let kind = super::SyncKind::named(&s.run.kind).unwrap_or(super::SyncKind::Org);
        for st in &s.stages {
            let repos = if st.repositories > 0 && st.stage != kind.root() {
                format!(
                    " · {} {}/{}",
                    kind.scopes(),
                    st.repositories_done,
                    st.repositories
                )
            } else {
                String::new()
            };
            outln!(
                "  {}. {:<32} {:<9}{repos} · {} pages · {} rows{}",
                st.position,
                st.title,
                st.status,
                st.pages,
                st.rows,
                st.detail
                    .as_ref()
                    .map(|d| format!(" · {d}"))
                    .unwrap_or_default()
            );
        }
        for r in &s.refused {
            outln!("  {}", refused_line(r));
        }
        if let Some(skew) = &s.clock_skew {
            outln!("  {}", skew_line(skew));
        }
        for line in calibration_lines(&s.calibration) {
            outln!("  {line}");
        }
    }
    Ok(Outcome::Success)
}

#[cfg(test)]
mod tests {
    use super::*;
    use headroom_core::Dimension;

    fn row(
        family: &str,
        dimension: Dimension,
        estimated: Option<u64>,
        requests: u64,
    ) -> CalibrationRow {
        let estimate = estimated.map(|units| headroom_sync::FamilyEstimate {
            family: family.into(),
            dimension,
            units,
        });
        let actual = headroom_sync::FamilyActual {
            family: family.into(),
            dimension,
            requests,
            points: requests,
        };
        let rows = headroom_sync::calibration::rows(
            estimate.as_slice(),
            std::slice::from_ref(&actual),
            false,
        );
        rows.into_iter().next().expect("a row for traffic seen")
    }

    #[test]
    fn the_binding_line_names_owner_fingerprint_and_rebinds() {
        let mut b = headroom_store::CredentialBinding::default();
        assert_eq!(binding_line(&b), None, "a run not bound yet has no line");
        b.owner = Some("user:alice".into());
        b.fingerprint = Some("fp-new".into());
        assert_eq!(
            binding_line(&b).as_deref(),
            Some("credential: user:alice, fingerprint fp-new")
        );
        b.rebind_count = 2;
        b.rebound_from = Some("fp-old".into());
        b.rebound_at = Some(Timestamp::from_second(1_800_000_000).expect("valid"));
        let line = binding_line(&b).expect("bound");
        assert!(
            line.ends_with(
                "rebound 2 times (latest at 2027-01-15T08:00:00Z, from fingerprint fp-old)"
            ),
            "{line}"
        );
        b.fingerprint = None;
        b.rebind_count = 0;
        assert_eq!(
            binding_line(&b).as_deref(),
            Some("credential: user:alice, unauthenticated")
        );
    }

    #[test]
    fn the_skew_line_gives_the_range_and_a_covering_margin() {
        let mut skew = ClockSkew::default();
        skew.observe(-400);
        skew.observe(-1_200);
        let line = skew_line(&skew);
        assert!(line.contains("-1.2 s latest"), "{line}");
        assert!(line.contains("-1.2 s to -0.4 s over 2 responses"), "{line}");
        assert!(line.contains("a reset margin of 3 s"), "{line}");
    }

    #[test]
    fn the_table_has_a_line_per_stage_family_and_the_run_totals() {
        let mut c = Calibration::default();
        c.stages.insert(
            "workflow_runs".into(),
            vec![row("check_runs", Dimension::RestCore, Some(2), 5)],
        );
        c.stages.insert(
            "pull_requests".into(),
            vec![row("commits", Dimension::GraphqlCost, None, 3)],
        );
        c.run = vec![
            row("check_runs", Dimension::RestCore, Some(2), 5),
            row("commits", Dimension::GraphqlCost, None, 3),
        ];
        let lines = calibration_lines(&c);
        assert_eq!(lines.len(), 2 + 2 + 2, "{lines:#?}");
        // Stages in graph order: pull_requests (5) before workflow_runs (7).
        assert!(lines[2].contains("pull_requests") && lines[2].contains("unbudgeted"));
        assert!(lines[3].contains("check_runs") && lines[3].contains("2.50"));
        assert!(lines[3].contains("UNDERESTIMATED"));
        assert!(lines[4].starts_with("  (run)"));
        assert!(calibration_lines(&Calibration::default()).is_empty());
    }
}
