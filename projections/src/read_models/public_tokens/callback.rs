//! Queries of the callback tokens (`callback_tokens`).

use super::lookup_hash;
use chrono::{DateTime, Utc};
use sqlx::PgPool;
use uuid::Uuid;

/// A callback token.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CallbackTokenRow {
    /// Token id.
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// Table.
    pub table_id: Uuid,
    /// Label.
    pub name: String,
    /// `create` or `create,update`.
    pub allowed_ops: String,
    /// SHA-256 of the secret, 64 hex digits.
    pub secret_sha256: String,
    /// Expiry.
    pub valid_until: Option<DateTime<Utc>>,
    /// Revoked.
    pub revoked: bool,
    /// The minting moderator (`user:<id>`).
    pub created_by: String,
    /// Minted.
    pub created_at: DateTime<Utc>,
    /// The run of a writeback or command-output credential.
    pub run_id: Option<Uuid>,
    /// The Command of a command-output credential.
    pub command_id: Option<Uuid>,
    /// That Command's version when the credential was minted.
    pub command_version: Option<i64>,
}

const SELECT: &str = "SELECT id, company_id, table_id, name, allowed_ops, secret_sha256,
        valid_until, revoked, created_by, created_at, run_id, command_id, command_version
   FROM callback_tokens";

/// The callback tokens moderators minted for a table, newest first (runs'
/// writeback credentials are not among them).
pub async fn of_table(pool: &PgPool, table: Uuid) -> sqlx::Result<Vec<CallbackTokenRow>> {
    sqlx::query_as(&format!(
        "{SELECT} WHERE table_id = $1 AND run_id IS NULL ORDER BY created_at DESC, id DESC"
    ))
    .bind(table)
    .fetch_all(pool)
    .await
}

/// The token with this id, found by the hash of the id.
pub async fn by_id(pool: &PgPool, token_id: Uuid) -> sqlx::Result<Option<CallbackTokenRow>> {
    sqlx::query_as(&format!("{SELECT} WHERE lookup_hash = $1"))
        .bind(lookup_hash(token_id))
        .fetch_optional(pool)
        .await
}
