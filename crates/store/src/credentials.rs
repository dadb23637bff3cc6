//! Credentials (host, fingerprint, owner: never a token) and the conditional-request
//! validators stored per credential and URL.

use headroom_core::redact::redact;

use crate::db::{Pools, ReadRow, get, on_each_pool};
use crate::error::Result;
use crate::model::{self, Credential, CredentialSeen, StoredEtag, SubjectKind, ms};

/// The columns every credential query reads.
pub(crate) const CREDENTIAL_COLUMNS: &str =
    "id, host, fingerprint, subject_kind, owner_login, first_seen_at_ms, last_seen_at_ms";

fn credential_from(row: &impl ReadRow) -> Result<Credential> {
    Ok(Credential {
        id: row.int("id")?,
        host: row.text("host")?,
        fingerprint: row.text("fingerprint")?,
        subject_kind: SubjectKind::parse(&row.text("subject_kind")?)?,
        owner_login: row.text("owner_login")?,
        first_seen_at: row.ts("first_seen_at_ms")?,
        last_seen_at: row.ts("last_seen_at_ms")?,
    })
}

pub(crate) async fn upsert_credential(
    pools: Pools<'_>,
    seen: &CredentialSeen,
) -> Result<Credential> {
    model::check_fingerprint(&seen.fingerprint)?;
    let sql = format!(
        "INSERT INTO credentials \
         (host, fingerprint, subject_kind, owner_login, first_seen_at_ms, last_seen_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $5) \
         ON CONFLICT (host, fingerprint) DO UPDATE SET \
         subject_kind = excluded.subject_kind, owner_login = excluded.owner_login, \
         first_seen_at_ms = CASE WHEN excluded.first_seen_at_ms < credentials.first_seen_at_ms \
             THEN excluded.first_seen_at_ms ELSE credentials.first_seen_at_ms END, \
         last_seen_at_ms = CASE WHEN excluded.last_seen_at_ms > credentials.last_seen_at_ms \
             THEN excluded.last_seen_at_ms ELSE credentials.last_seen_at_ms END \
         RETURNING {CREDENTIAL_COLUMNS}"
    );
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(seen.host.clone())
            .bind(seen.fingerprint.clone())
            .bind(seen.subject_kind.as_str())
            .bind(seen.owner_login.clone())
            .bind(ms(seen.seen_at))
            .fetch_one(pool)
            .await?;
        credential_from(&row)
    })
}

pub(crate) async fn credential(
    pools: Pools<'_>,
    host: &str,
    fingerprint: &str,
) -> Result<Option<Credential>> {
    let sql = format!(
        "SELECT {CREDENTIAL_COLUMNS} FROM credentials WHERE host = $1 AND fingerprint = $2"
    );
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(host.to_owned())
            .bind(fingerprint.to_owned())
            .fetch_optional(pool)
            .await?;
        row.as_ref().map(credential_from).transpose()
    })
}

pub(crate) async fn credentials_of(
    pools: Pools<'_>,
    host: &str,
    kind: SubjectKind,
    owner: &str,
) -> Result<Vec<Credential>> {
    let sql = format!(
        "SELECT {CREDENTIAL_COLUMNS} FROM credentials \
         WHERE host = $1 AND subject_kind = $2 AND owner_login = $3 \
         ORDER BY first_seen_at_ms, id"
    );
    on_each_pool!(pools, |pool| {
        let rows = sqlx::query(sqlx::AssertSqlSafe(sql))
            .bind(host.to_owned())
            .bind(kind.as_str())
            .bind(owner.to_owned())
            .fetch_all(pool)
            .await?;
        rows.iter().map(credential_from).collect()
    })
}

pub(crate) async fn count_credentials_sharing(
    pools: Pools<'_>,
    host: &str,
    kind: SubjectKind,
    owner: &str,
) -> Result<u64> {
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(
            "SELECT COUNT(*) AS n FROM credentials \
             WHERE host = $1 AND subject_kind = $2 AND owner_login = $3",
        )
        .bind(host.to_owned())
        .bind(kind.as_str())
        .bind(owner.to_owned())
        .fetch_one(pool)
        .await?;
        row.uint("n")
    })
}

pub(crate) async fn etag(
    pools: Pools<'_>,
    credential_fingerprint: &str,
    url: &str,
) -> Result<Option<StoredEtag>> {
    on_each_pool!(pools, |pool| {
        let row = sqlx::query(
            "SELECT credential_fingerprint, url, etag, last_modified, stored_at_ms \
             FROM etags WHERE credential_fingerprint = $1 AND url = $2",
        )
        .bind(credential_fingerprint.to_owned())
        .bind(redact(url))
        .fetch_optional(pool)
        .await?;
        let Some(row) = row else { return Ok(None) };
        Ok(Some(StoredEtag {
            credential_fingerprint: row.text("credential_fingerprint")?,
            url: row.text("url")?,
            etag: get(&row, "etag")?,
            last_modified: get(&row, "last_modified")?,
            stored_at: row.ts("stored_at_ms")?,
        }))
    })
}

pub(crate) async fn put_etag(pools: Pools<'_>, etag: &StoredEtag) -> Result<()> {
    if etag.credential_fingerprint != model::ANONYMOUS_FINGERPRINT {
        model::check_fingerprint(&etag.credential_fingerprint)?;
    }
    on_each_pool!(pools, |pool| {
        sqlx::query(
            "INSERT INTO etags (credential_fingerprint, url, etag, last_modified, stored_at_ms) \
             VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (credential_fingerprint, url) DO UPDATE SET \
             etag = excluded.etag, last_modified = excluded.last_modified, \
             stored_at_ms = excluded.stored_at_ms",
        )
        .bind(etag.credential_fingerprint.clone())
        .bind(redact(&etag.url))
        .bind(etag.etag.clone())
        .bind(etag.last_modified.clone())
        .bind(ms(etag.stored_at))
        .execute(pool)
        .await?;
        Ok(())
    })
}
