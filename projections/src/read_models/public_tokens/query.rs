//! Queries of the `public_tokens` read model.

use super::lookup_hash;
use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

/// A public read token (`public_read_tokens` with its last use).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct PublicTokenRow {
    /// Token id.
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// Table.
    pub table_id: Uuid,
    /// Published view.
    pub view_id: Uuid,
    /// Label.
    pub name: Option<String>,
    /// Column allowlist (internal keys).
    pub visible_columns: Option<Vec<String>>,
    /// Row policy.
    pub read_filter: Option<Json<Value>>,
    /// Whether the query route answers.
    pub allow_query: bool,
    /// Requests per minute.
    pub rpm: i64,
    /// Whether the id alone is the capability.
    pub secretless: bool,
    /// `sha256:<hex>` of the secret.
    pub secret_sha256: Option<String>,
    /// Expiry.
    pub valid_until: Option<DateTime<Utc>>,
    /// Revoked.
    pub revoked: bool,
    /// Minted by.
    pub created_by: String,
    /// Minted.
    pub created_at: DateTime<Utc>,
    /// Last read.
    pub last_used_at: Option<DateTime<Utc>>,
}

const SELECT: &str = "SELECT p.id, p.company_id, p.table_id, p.view_id, p.name, p.visible_columns,
        p.read_filter, p.allow_query, p.rpm, p.secretless, p.secret_sha256, p.valid_until,
        p.revoked, p.created_by, p.created_at, u.last_used_at
   FROM public_read_tokens p
   LEFT JOIN public_read_token_usage u ON u.token_id = p.id";

/// The tokens of a table, newest first.
pub async fn of_table(pool: &PgPool, table: Uuid) -> sqlx::Result<Vec<PublicTokenRow>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE p.table_id = $1 ORDER BY p.created_at DESC, p.id DESC"
    ))
    .bind(table)
    .fetch_all(pool)
    .await
}

/// The tokens of these tables, newest first.
pub async fn of_tables(pool: &PgPool, tables: &[Uuid]) -> sqlx::Result<Vec<PublicTokenRow>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE p.table_id = ANY($1) ORDER BY p.created_at DESC, p.id DESC"
    ))
    .bind(tables)
    .fetch_all(pool)
    .await
}

/// The token with this id, found by the hash of the id.
pub async fn by_id(pool: &PgPool, token_id: Uuid) -> sqlx::Result<Option<PublicTokenRow>> {
    sqlx::query_as(&format!("{SELECT} WHERE p.lookup_hash = $1"))
        .bind(lookup_hash(token_id))
        .fetch_optional(pool)
        .await
}

/// Records that the token was read now.
pub async fn touch(pool: &PgPool, token_id: Uuid, at: DateTime<Utc>) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO public_read_token_usage (token_id, last_used_at) VALUES ($1, $2)
         ON CONFLICT (token_id) DO UPDATE SET last_used_at = greatest(
             public_read_token_usage.last_used_at, EXCLUDED.last_used_at)",
    )
    .bind(token_id)
    .bind(at)
    .execute(pool)
    .await?;
    Ok(())
}
