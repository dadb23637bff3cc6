//! Stored diagnostics and their scrub: which columns hold free text that may carry what a
//! provider, a database or the network said ([`DIAGNOSTIC_COLUMNS`]), and [`scrub`], which
//! masks credentials in rows stored before a redaction pattern existed.
//!
//! Every write of these columns passes its value through `headroom_core::redact` at the
//! store's edge (`crates/store/tests/redaction_guard.rs` holds the sources to that). A row
//! written by an older release keeps its text until it is next overwritten; the scrub closes
//! that gap. It is idempotent, reads in keyset pages, and writes a row only if its text has
//! not changed since it was read (compare and swap), so it can run beside live writers.

use headroom_core::redact::{redact, redact_json};
use serde::Serialize;

use crate::db::{Pools, ReadRow, on_each_pool};
use crate::error::{Result, StoreError};

/// How a diagnostic column's rows are found again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RowKey {
    /// The table's integer `id`.
    Id,
    /// A checkpoint's `(sync_run_id, stage, scope)`.
    Checkpoint,
}

/// What a diagnostic column holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextShape {
    /// Plain text.
    Text,
    /// A JSON document whose strings may hold diagnostics.
    Json,
}

/// A column of free text that may hold what came from outside the process.
#[derive(Debug, Clone, Copy)]
pub struct DiagnosticColumn {
    /// The table.
    pub table: &'static str,
    /// The column.
    pub column: &'static str,
    /// How its rows are keyed.
    pub key: RowKey,
    /// Text or JSON.
    pub shape: TextShape,
}

const fn text(table: &'static str, column: &'static str) -> DiagnosticColumn {
    DiagnosticColumn {
        table,
        column,
        key: RowKey::Id,
        shape: TextShape::Text,
    }
}

/// Every column of free text a diagnostic can reach. A new one belongs here (the guard test
/// fails on a migration that adds such a column without naming it here or among its
/// exemptions).
pub const DIAGNOSTIC_COLUMNS: &[DiagnosticColumn] = &[
    text("event_sources", "last_error"),
    text("ingestion_runs", "stop_reason"),
    text("ingestion_runs", "error_message"),
    DiagnosticColumn {
        table: "ingestion_runs",
        column: "summary_json",
        key: RowKey::Id,
        shape: TextShape::Json,
    },
    text("actors", "last_error"),
    text("actors", "terminal_reason"),
    text("repositories", "last_error"),
    text("repositories", "terminal_reason"),
    text("quarantined_events", "error_message"),
    text("enrichment_batches", "error_message"),
    text("sync_runs", "failure_reason"),
    DiagnosticColumn {
        table: "sync_runs",
        column: "summary_json",
        key: RowKey::Id,
        shape: TextShape::Json,
    },
    DiagnosticColumn {
        table: "sync_checkpoints",
        column: "detail",
        key: RowKey::Checkpoint,
        shape: TextShape::Text,
    },
    text("quota_readings", "last_reason"),
];

/// What the scrub found (and, applied, changed) in one column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ColumnScrub {
    /// The table.
    pub table: &'static str,
    /// The column.
    pub column: &'static str,
    /// Rows with text in the column.
    pub rows_read: u64,
    /// Rows whose text holds a credential shape (masked when applied).
    pub rows_with_secrets: u64,
    /// Rows rewritten (0 on a dry run; fewer than found when a writer changed one meanwhile).
    pub rows_masked: u64,
}

/// The scrub's outcome, column by column.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ScrubReport {
    /// Whether rows were rewritten (false: a dry run).
    pub applied: bool,
    /// One entry per diagnostic column, in [`DIAGNOSTIC_COLUMNS`] order.
    pub columns: Vec<ColumnScrub>,
}

impl ScrubReport {
    /// Rows holding a credential shape, over every column.
    pub fn rows_with_secrets(&self) -> u64 {
        self.columns.iter().map(|c| c.rows_with_secrets).sum()
    }

    /// Rows rewritten, over every column.
    pub fn rows_masked(&self) -> u64 {
        self.columns.iter().map(|c| c.rows_masked).sum()
    }
}

/// Rows read per query.
const PAGE: i64 = 500;

/// One row's key, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Key {
    Id(i64),
    Checkpoint(i64, String, String),
}

/// Reads every diagnostic column; with `apply`, masks what holds a credential shape.
pub(crate) async fn scrub(pools: Pools<'_>, apply: bool) -> Result<ScrubReport> {
    let mut columns = Vec::with_capacity(DIAGNOSTIC_COLUMNS.len());
    for column in DIAGNOSTIC_COLUMNS {
        columns.push(scrub_column(pools, column, apply).await?);
    }
    Ok(ScrubReport {
        applied: apply,
        columns,
    })
}

/// The text as redaction leaves it, or `None` when redaction changes nothing.
fn masked(shape: TextShape, stored: &str) -> Result<Option<String>> {
    let out = match shape {
        TextShape::Text => redact(stored),
        TextShape::Json => {
            let doc: serde_json::Value =
                serde_json::from_str(stored).map_err(|e| StoreError::corrupt("summary_json", e))?;
            let clean = redact_json(&doc);
            if clean == doc {
                return Ok(None);
            }
            clean.to_string()
        }
    };
    Ok((out != stored).then_some(out))
}

async fn scrub_column(
    pools: Pools<'_>,
    column: &DiagnosticColumn,
    apply: bool,
) -> Result<ColumnScrub> {
    let mut report = ColumnScrub {
        table: column.table,
        column: column.column,
        rows_read: 0,
        rows_with_secrets: 0,
        rows_masked: 0,
    };
    let mut after = match column.key {
        RowKey::Id => Key::Id(i64::MIN),
        RowKey::Checkpoint => Key::Checkpoint(i64::MIN, String::new(), String::new()),
    };
    loop {
        let page = read_page(pools, column, &after).await?;
        let Some((last, _)) = page.last() else {
            break;
        };
        after = last.clone();
        for (key, stored) in &page {
            report.rows_read += 1;
            let Some(clean) = masked(column.shape, stored)? else {
                continue;
            };
            report.rows_with_secrets += 1;
            if apply && write_masked(pools, column, key, stored, &clean).await? {
                report.rows_masked += 1;
            }
        }
        if page.len() < PAGE as usize {
            break;
        }
    }
    Ok(report)
}

/// The next page of rows with text in the column, after `after`, as text.
async fn read_page(
    pools: Pools<'_>,
    column: &DiagnosticColumn,
    after: &Key,
) -> Result<Vec<(Key, String)>> {
    let (table, col) = (column.table, column.column);
    on_each_pool!(pools, |pool| {
        let rows = match after {
            Key::Id(id) => {
                let sql = format!(
                    "SELECT id, CAST({col} AS TEXT) AS stored FROM {table} \
                     WHERE {col} IS NOT NULL AND id > $1 ORDER BY id LIMIT $2"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(*id)
                    .bind(PAGE)
                    .fetch_all(pool)
                    .await?
            }
            Key::Checkpoint(run, stage, scope) => {
                let sql = format!(
                    "SELECT sync_run_id, stage, scope, CAST({col} AS TEXT) AS stored FROM {table} \
                     WHERE {col} IS NOT NULL AND (sync_run_id, stage, scope) > ($1, $2, $3) \
                     ORDER BY sync_run_id, stage, scope LIMIT $4"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(*run)
                    .bind(stage.clone())
                    .bind(scope.clone())
                    .bind(PAGE)
                    .fetch_all(pool)
                    .await?
            }
        };
        rows.iter()
            .map(|row| {
                let key = match after {
                    Key::Id(_) => Key::Id(row.int("id")?),
                    Key::Checkpoint(..) => Key::Checkpoint(
                        row.int("sync_run_id")?,
                        row.text("stage")?,
                        row.text("scope")?,
                    ),
                };
                Ok((key, row.text("stored")?))
            })
            .collect::<Result<Vec<_>>>()
    })
}

/// Writes the masked text if the row still holds what was read; whether it did.
async fn write_masked(
    pools: Pools<'_>,
    column: &DiagnosticColumn,
    key: &Key,
    stored: &str,
    clean: &str,
) -> Result<bool> {
    let (table, col) = (column.table, column.column);
    let value = match (column.shape, pools) {
        // The masked document is written as the column's own type on either backend.
        (TextShape::Json, Pools::Pg(_)) => "CAST($1 AS JSONB)",
        _ => "$1",
    };
    let affected = on_each_pool!(pools, |pool| {
        match key {
            Key::Id(id) => {
                let sql = format!(
                    "UPDATE {table} SET {col} = {value} \
                     WHERE id = $2 AND CAST({col} AS TEXT) = $3"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(clean.to_owned())
                    .bind(*id)
                    .bind(stored.to_owned())
                    .execute(pool)
                    .await?
                    .rows_affected()
            }
            Key::Checkpoint(run, stage, scope) => {
                let sql = format!(
                    "UPDATE {table} SET {col} = {value} WHERE sync_run_id = $2 AND stage = $3 \
                     AND scope = $4 AND CAST({col} AS TEXT) = $5"
                );
                sqlx::query(sqlx::AssertSqlSafe(sql))
                    .bind(clean.to_owned())
                    .bind(*run)
                    .bind(stage.clone())
                    .bind(scope.clone())
                    .bind(stored.to_owned())
                    .execute(pool)
                    .await?
                    .rows_affected()
            }
        }
    });
    Ok(affected == 1)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_with_a_credential_is_masked_and_clean_text_is_left_alone() {
        let dirty = "401 from https://alice:hunter2@example.test/api";
        assert_eq!(
            masked(TextShape::Text, dirty).ok().flatten().as_deref(),
            Some("401 from https://[REDACTED]@example.test/api")
        );
        assert_eq!(
            masked(TextShape::Text, "403 forbidden").ok().flatten(),
            None
        );
    }

    #[test]
    fn a_json_summary_is_masked_string_by_string() {
        let dirty = r#"{"detail":"Authorization: Bearer ghp_abc123","pages":2}"#;
        let clean = masked(TextShape::Json, dirty).ok().flatten();
        let doc: Option<serde_json::Value> = clean.and_then(|c| serde_json::from_str(&c).ok());
        assert_eq!(
            doc,
            Some(serde_json::json!({"detail": "Authorization: [REDACTED]", "pages": 2}))
        );
        assert_eq!(
            masked(TextShape::Json, r#"{"pages": 2}"#).ok().flatten(),
            None
        );
    }
}
