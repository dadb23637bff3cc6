//! The figures of the feed's state summary.

use super::*;

pub(super) async fn feed_overview(pools: Pools<'_>) -> Result<FeedOverview> {
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(
            "SELECT (SELECT COUNT(*) FROM push_events) AS push_events, \
         (SELECT COUNT(*) FROM actors WHERE enrichment_status IN \
             ('pending', 'retryable_failure')) AS pending_actors, \
         (SELECT COUNT(*) FROM repositories WHERE enrichment_status IN \
             ('pending', 'retryable_failure')) AS pending_repositories, \
         (SELECT COUNT(*) FROM quarantined_events) AS quarantined",
        )
        .fetch_one(pool)
        .await?;
        let latest = sqlx::query(
            "SELECT run_id, finished_at_ms FROM ingestion_runs \
         WHERE status = $1 AND finished_at_ms IS NOT NULL \
         ORDER BY finished_at_ms DESC, id DESC LIMIT 1",
        )
        .bind(IngestionRunStatus::Completed.as_str())
        .fetch_optional(pool)
        .await?;
        let latest_completed_run = match latest {
            Some(r) => Some((
                get::<String>(&r, "run_id")?,
                from_ms("finished_at_ms", get(&r, "finished_at_ms")?)?,
            )),
            None => None,
        };
        Ok(FeedOverview {
            push_events: to_u64("push_events", get(&row, "push_events")?)?,
            pending_actors: to_u64("pending_actors", get(&row, "pending_actors")?)?,
            pending_repositories: to_u64(
                "pending_repositories",
                get(&row, "pending_repositories")?,
            )?,
            quarantined: to_u64("quarantined", get(&row, "quarantined")?)?,
            latest_completed_run,
        })
    })
}
