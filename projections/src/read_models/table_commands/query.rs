//! Queries of the Commands (`custom_table_commands`).

use chrono::{DateTime, Utc};
use domain::tables::command::CommandDefinition;
use domain::tables::scope::ScopeKind;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

/// A Command at its current version.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct CommandRow {
    /// The Command.
    pub id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Its table.
    pub table_id: Uuid,
    /// The table's owning scope kind.
    pub scope_kind: ScopeKind,
    /// The table's owning scope id.
    pub scope_id: Uuid,
    /// The current version.
    pub version: i64,
    /// The current definition.
    pub definition: Json<CommandDefinition>,
    /// The current version's author (`user:<id>`).
    pub defined_by: String,
    /// Defined.
    pub created_at: DateTime<Utc>,
    /// Last redefined.
    pub updated_at: DateTime<Utc>,
}

/// The Command with this id in the company.
pub async fn command(pool: &PgPool, company: Uuid, id: Uuid) -> sqlx::Result<Option<CommandRow>> {
    sqlx::query_as(
        "SELECT id, company_id, table_id, scope_kind, scope_id, version, definition,
                defined_by, created_at, updated_at
           FROM custom_table_commands WHERE id = $1 AND company_id = $2",
    )
    .bind(id)
    .bind(company)
    .fetch_optional(pool)
    .await
}
