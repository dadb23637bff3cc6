//! The queries over the organization-sync and GitLab tables: a record's upsert, repository
//! and GitLab project watermarks, and the reads the stages plan with.

use headroom_core::clock::Timestamp;

use std::collections::HashSet;

use super::{GitlabFamily, ROWS_PER_STATEMENT, Record, RowSpec, SqlValue};
use crate::db::{Conn, Pools, ReadRow, on_each_conn, on_each_pool};
use crate::error::{Result, StoreError};
use crate::model::{Watermark, ms};

/// Upserts one record on `conn`; returns the row's surrogate id where the table has one.
pub(crate) async fn upsert(conn: &mut Conn<'_>, record: &Record) -> Result<Option<i64>> {
    upsert_rows(conn, std::slice::from_ref(&record.spec())).await
}

/// Upserts `records` on `conn` with the result of upserting them one by one, in order, but
/// in as few statements as their shapes allow: a page's rows are mostly of a shape or two,
/// and each statement is a round trip to the database.
pub(crate) async fn upsert_all(conn: &mut Conn<'_>, records: &[Record]) -> Result<()> {
    let specs: Vec<RowSpec> = records.iter().map(Record::spec).collect();
    let mut start = 0;
    while start < specs.len() {
        let end = batch_end(&specs, start);
        upsert_rows(conn, &specs[start..end]).await?;
        start = end;
    }
    Ok(())
}

/// Where the run of rows from `start` that one statement carries ends: rows of one shape,
/// none returning an id, no identity twice. PostgreSQL refuses a statement that updates one
/// row twice, so a repeated identity starts the next statement, which keeps the order's
/// result on both backends.
fn batch_end(specs: &[RowSpec], start: usize) -> usize {
    let first = &specs[start];
    if first.returns_id {
        return start + 1;
    }
    let shape = first.shape();
    let mut keys = HashSet::new();
    let mut end = start;
    while end < specs.len() && end - start < ROWS_PER_STATEMENT {
        let spec = &specs[end];
        if spec.shape() != shape || !keys.insert(spec.conflict_key()) {
            break;
        }
        end += 1;
    }
    end.max(start + 1)
}

/// Upserts `rows`, all of one shape, in one statement; returns the surrogate id of a single
/// row whose table has one.
async fn upsert_rows(conn: &mut Conn<'_>, rows: &[RowSpec]) -> Result<Option<i64>> {
    let Some(spec) = rows.first() else {
        return Ok(None);
    };
    let sql = spec.sql_rows(rows.len());
    on_each_conn!(conn, |c| {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(sql));
        for (_, value) in rows.iter().flat_map(|r| &r.values) {
            query = match value {
                SqlValue::Int(v) => query.bind(*v),
                SqlValue::Float(v) => query.bind(*v),
                SqlValue::Text(v) => query.bind(v.clone()),
                SqlValue::Bool(v) => query.bind(*v),
                SqlValue::Json(v) => query.bind(v.clone().map(sqlx::types::Json)),
            };
        }
        if spec.returns_id {
            let row = query.fetch_one(&mut *c).await?;
            Ok(Some(row.int("id")?))
        } else {
            query.execute(&mut *c).await?;
            Ok(None)
        }
    })
}

/// Moves a repository's watermark forward (never back); the repository must exist.
pub(crate) async fn set_watermark(
    conn: &mut Conn<'_>,
    repository_github_id: i64,
    watermark: Watermark,
    at: Timestamp,
) -> Result<()> {
    let column = watermark.column();
    let sql = format!(
        "UPDATE repositories SET {column} = $1 \
         WHERE github_id = $2 AND ({column} IS NULL OR {column} < $1)"
    );
    let exists = on_each_conn!(conn, |c| {
        let done = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(ms(at))
            .bind(repository_github_id)
            .execute(&mut *c)
            .await?;
        done.rows_affected() > 0
            || sqlx::query("SELECT 1 FROM repositories WHERE github_id = $1")
                .bind(repository_github_id)
                .fetch_optional(&mut *c)
                .await?
                .is_some()
    });
    if !exists {
        return Err(StoreError::NotFound(format!(
            "repository {repository_github_id}"
        )));
    }
    Ok(())
}

pub(crate) async fn watermark(
    pools: Pools<'_>,
    repository_github_id: i64,
    watermark: Watermark,
) -> Result<Option<Timestamp>> {
    let column = watermark.column();
    let sql = format!("SELECT {column} AS mark FROM repositories WHERE github_id = $1");
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(repository_github_id)
            .fetch_optional(pool)
            .await?;
        let Some(row) = row else {
            return Err(StoreError::NotFound(format!(
                "repository {repository_github_id}"
            )));
        };
        row.opt_ts("mark")
    })
}

/// A GitLab project's watermark for one family; `None` when it was never collected.
pub(crate) async fn gitlab_watermark(
    pools: Pools<'_>,
    instance: &str,
    project_id: i64,
    family: GitlabFamily,
) -> Result<Option<Timestamp>> {
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(
            "SELECT collected_at_ms FROM gitlab_watermarks \
             WHERE instance = $1 AND project_id = $2 AND family = $3",
        )
        .bind(instance.to_owned())
        .bind(project_id)
        .bind(family.as_str())
        .fetch_optional(pool)
        .await?;
        row.as_ref().map(|r| r.ts("collected_at_ms")).transpose()
    })
}

/// A watermark table keyed by a tenant and a scope: `(table, tenant column, scope column)`.
pub(crate) type MarkTable = (&'static str, &'static str, &'static str);
/// Jira's: per site and scope.
pub(crate) const JIRA_MARKS: MarkTable = ("jira_watermarks", "site", "scope");
/// Linear's: per workspace and family.
pub(crate) const LINEAR_MARKS: MarkTable = ("linear_watermarks", "workspace", "family");

/// The watermark of `scope` in `tenant`, from one of the [`MarkTable`]s (names are this
/// module's constants, never input).
pub(crate) async fn keyed_watermark(
    pools: Pools<'_>,
    (table, tenant_column, scope_column): MarkTable,
    tenant: &str,
    scope: &str,
) -> Result<Option<Timestamp>> {
    let sql = format!(
        "SELECT collected_at_ms FROM {table} WHERE {tenant_column} = $1 AND {scope_column} = $2"
    );
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql.clone()))
            .bind(tenant.to_owned())
            .bind(scope.to_owned())
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(|r| r.ts("collected_at_ms")).transpose()
    })
}

/// The newest stored LaunchDarkly audit entry's date (epoch ms) in `account`.
pub(crate) async fn ld_audit_watermark(pools: Pools<'_>, account: &str) -> Result<Option<i64>> {
    on_each_pool!(pools, |pool| {
        let row =
            sqlx::query("SELECT MAX(date_at_ms) AS mark FROM ld_audit_entries WHERE account = $1")
                .bind(account.to_owned())
                .fetch_one(pool)
                .await?;
        row.opt_int("mark")
    })
}

pub(crate) async fn organization_id(pools: Pools<'_>, login: &str) -> Result<Option<i64>> {
    on_each_pool!(pools, |pool| {
        let row = sqlx::query("SELECT id FROM organizations WHERE login = $1")
            .bind(login.to_owned())
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(|r| r.int("id")).transpose()
    })
}

pub(crate) async fn commit_shas_without_files(
    pools: Pools<'_>,
    repository_github_id: i64,
) -> Result<Vec<String>> {
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(
            "SELECT DISTINCT c.commit_sha FROM pull_request_commits c \
             WHERE c.repository_github_id = $1 AND NOT EXISTS (\
               SELECT 1 FROM commit_files f \
               WHERE f.repository_github_id = c.repository_github_id \
               AND f.commit_sha = c.commit_sha) \
             ORDER BY c.commit_sha",
        )
        .bind(repository_github_id)
        .fetch_all(pool)
        .await?;
        rows.iter().map(|r| r.text("commit_sha")).collect()
    })
}
