//! Stage 6, `commit_files` (REST): the files of every pull-request commit.

use std::sync::Mutex;

use headroom_core::telemetry;

use super::connection::*;

// ----------------------------------------------------------------------- 6. commit files

/// Stage 6: Files of every pull-request commit that has none stored yet (REST, one request per
/// commit). Commits are immutable: a commit with files is never fetched again, which makes
/// the stage both resumable and incremental.
#[derive(Debug)]
pub struct CommitFilesStage {
    decl: StageDecl,
}

impl CommitFilesStage {
    /// The stage.
    pub fn new(decl: StageDecl) -> Self {
        Self { decl }
    }
}

#[async_trait]
impl Stage for CommitFilesStage {
    fn decl(&self) -> &StageDecl {
        &self.decl
    }

    async fn run(&self, ctx: &StageCtx<'_>) -> Result<(), StageError> {
        let repositories = ctx.repositories().await?;
        ctx.for_each_repository(repositories, |repo| async move {
            one_repository(ctx, &repo).await
        })
        .await
    }
}

/// One repository's commit files: its commits side by side (each is one request that
/// follows no cursor), each commit's files committed as soon as they arrive, so a stop loses
/// only the requests in flight.
async fn one_repository(ctx: &StageCtx<'_>, repo: &RepoScope) -> Result<(), StageError> {
    let scope = repo.scope();
    if repo_cursor(ctx, &scope).await?.is_none() {
        return Ok(());
    }
    // Set when the repository answers 404/410: the commits not yet asked are not asked.
    let gone: Mutex<Option<String>> = Mutex::new(None);
    let shas = ctx
        .store()
        .commit_shas_without_files(repo.github_id)
        .await?;
    ctx.for_each_request(shas, |sha| {
        let (scope, gone) = (&scope, &gone);
        async move {
            if gone.lock().is_ok_and(|g| g.is_some()) {
                return Ok(());
            }
            let path = format!("/repos/{}/commits/{sha}", repo.full_name);
            match rest_get(ctx, route::COMMIT_FILES, &path).await {
                Ok(response) => {
                    let body: Value = response
                        .json()
                        .map_err(|e| StageError::Transient(e.to_string()))?;
                    let now = ctx.now();
                    let records: Vec<Record> = body
                        .get("files")
                        .and_then(Value::as_array)
                        .map_or(&[][..], Vec::as_slice)
                        .iter()
                        .filter_map(|f| rows::commit_file(f, repo.github_id, &sha, now))
                        .collect();
                    ctx.write_page(scope, &records, Some(sha.clone()), false, None)
                        .await?;
                }
                // The repository is gone: a fact, recorded on its scope.
                Err(ApiError::Gone { status }) => {
                    if let Ok(mut g) = gone.lock() {
                        g.get_or_insert_with(|| format!("repository answered {status}"));
                    }
                }
                // This commit cannot be read (422: unknown to GitHub); the others can.
                Err(ApiError::Status { status, message }) => {
                    tracing::warn!(
                        event = telemetry::ORG_COMMIT_SKIPPED,
                        repository = %repo.full_name,
                        %sha,
                        status,
                        %message,
                        "commit skipped"
                    );
                }
                Err(e) => return Err(e.into()),
            }
            Ok(())
        }
    })
    .await?;
    let gone = gone
        .into_inner()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    ctx.finish_scope(&scope, gone).await?;
    Ok(())
}
