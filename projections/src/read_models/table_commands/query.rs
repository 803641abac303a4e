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

/// The Commands of these tables, oldest first.
pub async fn table_commands(pool: &PgPool, tables: &[Uuid]) -> sqlx::Result<Vec<CommandRow>> {
    sqlx::query_as(
        "SELECT id, company_id, table_id, scope_kind, scope_id, version, definition,
                defined_by, created_at, updated_at
           FROM custom_table_commands WHERE table_id = ANY($1) ORDER BY created_at, id",
    )
    .bind(tables)
    .fetch_all(pool)
    .await
}

/// An agent delivery marker.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct DeliveryRow {
    /// The marker.
    pub id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// The Command delivered.
    pub command_id: Uuid,
    /// The agent (`social_media_client:<id>`).
    pub agent: String,
    /// The delivery's key.
    pub key: String,
    /// The record it wrote.
    pub record_id: Uuid,
    /// `created` or `updated`.
    pub op: String,
    /// Left.
    pub marked_at: DateTime<Utc>,
    /// Valid until.
    pub expires_at: DateTime<Utc>,
    /// Retired.
    pub acknowledged_at: Option<DateTime<Utc>>,
    /// `operator` or `capacity`.
    pub acknowledged_by: Option<String>,
}

const DELIVERY: &str = "SELECT id, company_id, command_id, agent, key, record_id, op, marked_at,
        expires_at, acknowledged_at, acknowledged_by
   FROM custom_table_agent_deliveries";

/// The valid markers of one reconciliation (a Command and an agent), oldest first.
pub async fn valid_markers(
    pool: &PgPool,
    command: Uuid,
    agent: &str,
    now: DateTime<Utc>,
) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as(&format!(
        "{DELIVERY} WHERE command_id = $1 AND agent = $2 AND acknowledged_at IS NULL
            AND expires_at > $3 ORDER BY marked_at, id"
    ))
    .bind(command)
    .bind(agent)
    .bind(now)
    .fetch_all(pool)
    .await
}

/// The markers not yet acknowledged, of one company or Command or all, oldest
/// first (expired ones included).
pub async fn open_markers(
    pool: &PgPool,
    company: Option<Uuid>,
    command: Option<Uuid>,
) -> sqlx::Result<Vec<DeliveryRow>> {
    sqlx::query_as(&format!(
        "{DELIVERY} WHERE acknowledged_at IS NULL
            AND ($1::uuid IS NULL OR company_id = $1) AND ($2::uuid IS NULL OR command_id = $2)
          ORDER BY marked_at, id"
    ))
    .bind(company)
    .bind(command)
    .fetch_all(pool)
    .await
}
