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

/// Scripts the company uploaded since `since` (they count toward the upload rate).
pub async fn scripts_since(
    pool: &PgPool,
    company: Uuid,
    since: DateTime<Utc>,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM owned_objects WHERE company_id = $1 AND kind = 'script' AND created_at > $2",
    )
    .bind(company)
    .bind(since)
    .fetch_one(pool)
    .await
}

/// A live script upload of the company whose key starts with `prefix` (its task's
/// scripts), stored less than `ttl_hours` ago.
pub async fn live_script(
    pool: &PgPool,
    company: Uuid,
    id: Uuid,
    prefix: &str,
    ttl_hours: i32,
) -> sqlx::Result<Option<ObjectRow>> {
    sqlx::query_as(
        "SELECT * FROM owned_objects
          WHERE id = $1 AND company_id = $2 AND kind = 'script' AND deletion_state = 'active'
            AND starts_with(key, $3) AND created_at > now() - make_interval(hours => $4)",
    )
    .bind(id)
    .bind(company)
    .bind(prefix)
    .bind(ttl_hours)
    .fetch_optional(pool)
    .await
}
