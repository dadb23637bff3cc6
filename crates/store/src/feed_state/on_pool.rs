//! The one implementation of [`FeedStateRead`] and [`FeedState`] both backends answer
//! through: each method is an ordinary function of its aggregate's module over the store's
//! pool.

use super::*;

#[async_trait]
impl<S> FeedStateRead for S
where
    S: OnPool + Send + Sync + std::fmt::Debug,
{
    async fn event_source(&self, source_type: &str) -> Result<Option<EventSource>> {
        sources::event_source(self.pools(), source_type).await
    }

    async fn core_ledger(&self, host: &str, subject: &str) -> Result<Option<CoreLedger>> {
        ledgers::core_ledger(self.pools(), host, subject).await
    }

    async fn feed_overview(&self) -> Result<FeedOverview> {
        overview::feed_overview(self.pools()).await
    }

    async fn has_claimable(&self, kind: EntityKind, lane: Lane, now: Timestamp) -> Result<bool> {
        claims::has_claimable(self.pools(), kind, lane, now).await
    }

    async fn has_refreshable(&self, kind: EntityKind, window: RefreshWindow) -> Result<bool> {
        claims::has_refreshable(self.pools(), kind, window).await
    }

    async fn enrichment_counts(&self, kind: EntityKind) -> Result<EnrichmentCounts> {
        enrichment::enrichment_counts(self.pools(), kind).await
    }

    async fn search_ledger(&self, host: &str, subject: &str) -> Result<Option<SearchLedger>> {
        ledgers::search_ledger(self.pools(), host, subject).await
    }
}

#[async_trait]
impl<S> FeedState for S
where
    S: OnPool + Send + Sync + std::fmt::Debug,
{
    async fn ensure_event_source(
        &self,
        source_type: &str,
        url: &str,
        now: Timestamp,
    ) -> Result<EventSource> {
        sources::ensure_event_source(self.pools(), source_type, url, now).await
    }

    async fn try_lock_event_source(
        &self,
        id: i64,
        holder: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> Result<bool> {
        sources::try_lock_event_source(self.pools(), id, holder, now, until).await
    }

    async fn unlock_event_source(&self, id: i64, holder: &str) -> Result<()> {
        sources::unlock_event_source(self.pools(), id, holder).await
    }

    async fn save_event_source(&self, s: &EventSource, now: Timestamp) -> Result<()> {
        sources::save_event_source(self.pools(), s, now).await
    }

    async fn start_ingestion_run(
        &self,
        run_id: &str,
        event_source_id: Option<i64>,
        origin: &str,
        credential: Option<&crate::CredentialUsed>,
        started_at: Timestamp,
    ) -> Result<i64> {
        let run = sources::NewIngestionRun {
            run_id,
            event_source_id,
            origin,
            credential,
        };
        sources::start_ingestion_run(self.pools(), &run, started_at).await
    }

    async fn finish_ingestion_run(&self, id: i64, e: &IngestionRunEnd) -> Result<()> {
        sources::finish_ingestion_run(self.pools(), id, e).await
    }

    async fn save_core_ledger(&self, l: &CoreLedger, now: Timestamp) -> Result<()> {
        ledgers::save_core_ledger(self.pools(), l, now).await
    }

    async fn claim(
        &self,
        kind: EntityKind,
        lane: Lane,
        limit: u32,
        now: Timestamp,
        token: &str,
        until: Timestamp,
    ) -> Result<Vec<Claimed>> {
        claims::claim(self.pools(), kind, lane, limit, now, token, until).await
    }

    async fn claim_refresh(
        &self,
        kind: EntityKind,
        limit: u32,
        window: RefreshWindow,
        token: &str,
        until: Timestamp,
    ) -> Result<Vec<Claimed>> {
        claims::claim_refresh(self.pools(), kind, limit, window, token, until).await
    }

    async fn reconcile(&self, now: Timestamp, abandoned_before: Timestamp) -> Result<Reconciled> {
        reconcile::reconcile(self.pools(), now, abandoned_before).await
    }

    async fn release(
        &self,
        kind: EntityKind,
        token: &str,
        lane: Lane,
        now: Timestamp,
    ) -> Result<()> {
        claims::release(self.pools(), kind, token, lane, now).await
    }

    async fn apply(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        item: &Enriched,
        now: Timestamp,
    ) -> Result<bool> {
        enrichment::apply(self.pools(), kind, github_id, token, item, now).await
    }

    async fn admit_detail(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<bool> {
        enrichment::admit_detail(self.pools(), kind, github_id, token, reason, now).await
    }

    async fn schedule_retry(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        lane: Lane,
        next_retry_at: Timestamp,
        error: &str,
        now: Timestamp,
    ) -> Result<bool> {
        enrichment::schedule_retry(
            self.pools(),
            kind,
            github_id,
            token,
            lane,
            next_retry_at,
            error,
            now,
        )
        .await
    }

    async fn mark_terminal(
        &self,
        kind: EntityKind,
        github_id: i64,
        token: &str,
        reason: &str,
        now: Timestamp,
    ) -> Result<bool> {
        enrichment::mark_terminal(self.pools(), kind, github_id, token, reason, now).await
    }

    async fn save_search_ledger(&self, l: &SearchLedger, now: Timestamp) -> Result<()> {
        ledgers::save_search_ledger(self.pools(), l, now).await
    }

    async fn record_batch(&self, envelope: &BatchEnvelope<'_>) -> Result<i64> {
        enrichment::record_batch(self.pools(), envelope).await
    }

    async fn record_observation(
        &self,
        kind: EntityKind,
        github_id: i64,
        source: &str,
        outcome: &str,
        batch_id: Option<i64>,
        raw: &serde_json::Value,
        now: Timestamp,
    ) -> Result<()> {
        ledgers::record_observation(
            self.pools(),
            kind,
            github_id,
            source,
            outcome,
            batch_id,
            raw,
            now,
        )
        .await
    }
}
