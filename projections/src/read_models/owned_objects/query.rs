//! Queries of the owned-objects read model.

use super::ObjectRow;
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// An object by id.
pub async fn object(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<ObjectRow>> {
    sqlx::query_as("SELECT * FROM owned_objects WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Scripts and task bundles the company uploaded since `since` (they count toward
/// the upload rate).
pub async fn file_uploads_since(
    pool: &PgPool,
    company: Uuid,
    since: DateTime<Utc>,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM owned_objects WHERE company_id = $1 AND kind IN ('script', 'task_bundle') AND created_at > $2",
    )
    .bind(company)
    .bind(since)
    .fetch_one(pool)
    .await
}

/// A live upload of this kind (a script, a task bundle) of the company whose key
/// starts with `prefix` (its task's uploads), stored less than `ttl_hours` ago.
pub async fn live_upload(
    pool: &PgPool,
    kind: &str,
    company: Uuid,
    id: Uuid,
    prefix: &str,
    ttl_hours: i32,
) -> sqlx::Result<Option<ObjectRow>> {
    sqlx::query_as(
        "SELECT * FROM owned_objects
          WHERE id = $1 AND company_id = $2 AND kind = $5 AND deletion_state = 'active'
            AND starts_with(key, $3) AND created_at > now() - make_interval(hours => $4)",
    )
    .bind(id)
    .bind(company)
    .bind(prefix)
    .bind(ttl_hours)
    .bind(kind)
    .fetch_optional(pool)
    .await
}

/// The bytes behind an attachment key while any upload of them is live: their
/// size and when they were last uploaded.
pub async fn attachment(
    pool: &PgPool,
    company: Uuid,
    key: &str,
) -> sqlx::Result<Option<(i64, DateTime<Utc>)>> {
    sqlx::query_as(
        "SELECT max(byte_size), max(created_at) FROM owned_objects
          WHERE company_id = $1 AND key = $2 AND kind = 'attachment' AND deletion_state = 'active'
         HAVING count(*) > 0",
    )
    .bind(company)
    .bind(key)
    .fetch_optional(pool)
    .await
}

/// Attachment keys no live record holds (`custom_table_blob_holders`) whose last
/// upload is older than `$1`, with their company and the uploads behind them that
/// are not deleted yet (`active`, or `delete_pending` when an earlier sweep stopped
/// before the bytes went), oldest first, at most `$2`; `{only}` narrows the keys.
/// Keys have the form `attachments/<company>/<table>/<hex digest>`.
const UNHELD: &str = "SELECT o.key, o.company_id, array_agg(o.id) FROM owned_objects o
      WHERE o.kind = 'attachment' AND o.deletion_state IN ('active', 'delete_pending') {only}
        AND NOT EXISTS (SELECT 1 FROM custom_table_blob_holders h
                         WHERE h.table_id = split_part(o.key, '/', 3)::uuid
                           AND h.blob_id = 'sha256:' || split_part(o.key, '/', 4))
      GROUP BY o.key, o.company_id HAVING max(o.created_at) < $1
      ORDER BY max(o.created_at) LIMIT $2";

/// The attachment files no live record holds, last uploaded before `before`: each
/// key with its company and its uploads not deleted yet, at most `limit` keys,
/// oldest first.
pub async fn unheld_attachments(
    pool: &PgPool,
    before: DateTime<Utc>,
    limit: i64,
) -> sqlx::Result<Vec<(String, Uuid, Vec<Uuid>)>> {
    sqlx::query_as(&UNHELD.replace("{only}", ""))
        .bind(before)
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// The uploads behind `key` if it is still an unheld attachment file last uploaded
/// before `before` (the janitor's check again, under the key's lock, just before
/// the bytes go).
pub async fn unheld_attachment(
    pool: &PgPool,
    key: &str,
    before: DateTime<Utc>,
) -> sqlx::Result<Option<Vec<Uuid>>> {
    let row: Option<(String, Uuid, Vec<Uuid>)> =
        sqlx::query_as(&UNHELD.replace("{only}", "AND o.key = $3"))
            .bind(before)
            .bind(1_i64)
            .bind(key)
            .fetch_optional(pool)
            .await?;
    Ok(row.map(|(_, _, uploads)| uploads))
}
