//! Queries of the custom-table registry (`custom_tables`, `custom_table_columns`);
//! records are read through [`super::read`].

use chrono::{DateTime, Utc};
use domain::tables::column::ColumnDef;
use domain::tables::scope::{ScopeKind, ScopeRef};
use domain::tables::trigger::Trigger;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

/// A custom table (`custom_tables`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TableRow {
    /// Id.
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// The owning scope's kind.
    pub scope_kind: ScopeKind,
    /// The owning scope's id (the company's for company tables).
    pub scope_id: Uuid,
    /// Display name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// Creator reference.
    pub created_by: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Live records.
    pub record_count: i64,
    /// The background migration holding it.
    pub migration_id: Option<Uuid>,
    /// Social media clients may reach it through their grants.
    pub client_access: bool,
    /// Social media clients give a passphrase first.
    pub client_passphrase: bool,
    /// The channel scope column of a governed department table.
    pub channel_scope_column: Option<String>,
    /// `settings.agent_writes_via_commands_only`.
    pub agent_writes_via_commands_only: bool,
    /// The log position of the table's last change (schema or records): equal
    /// versions read the same data, so answers can be cached against it.
    pub data_version: i64,
}

impl TableRow {
    /// The owning scope.
    pub fn scope(&self) -> ScopeRef {
        ScopeRef {
            kind: self.scope_kind,
            id: self.scope_id,
        }
    }
}

const TABLE: &str = "SELECT id, company_id, scope_kind, scope_id, name, description, created_by,
        created_at, updated_at, record_count, migration_id, client_access, client_passphrase, channel_scope_column,
        agent_writes_via_commands_only, data_version
   FROM custom_tables t";

/// A table of the company.
pub async fn table(pool: &PgPool, company: Uuid, id: Uuid) -> sqlx::Result<Option<TableRow>> {
    sqlx::query_as(&format!("{TABLE} WHERE t.id = $1 AND t.company_id = $2"))
        .bind(id)
        .bind(company)
        .fetch_optional(pool)
        .await
}

/// Whether the table is a live table of the company.
pub async fn exists(pool: &PgPool, company: Uuid, id: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM custom_tables WHERE id = $1 AND company_id = $2)",
    )
    .bind(id)
    .bind(company)
    .fetch_one(pool)
    .await
}

/// A page of the tables of a scope, oldest first; `clients` keeps only tables
/// social media clients may reach.
pub async fn scope_tables(
    pool: &PgPool,
    company: Uuid,
    scope: ScopeRef,
    clients: bool,
    skip: i64,
    limit: i64,
) -> sqlx::Result<Vec<TableRow>> {
    sqlx::query_as(&format!(
        "{TABLE} WHERE t.company_id = $1 AND t.scope_kind = $2 AND t.scope_id = $3
            AND (t.client_access OR NOT $4)
          ORDER BY t.created_at, t.id LIMIT $5 OFFSET $6"
    ))
    .bind(company)
    .bind(scope.kind)
    .bind(scope.id)
    .bind(clients)
    .bind(limit)
    .bind(skip)
    .fetch_all(pool)
    .await
}

/// How many tables [`scope_tables`] pages through.
pub async fn scope_table_count(
    pool: &PgPool,
    company: Uuid,
    scope: ScopeRef,
    clients: bool,
) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM custom_tables WHERE company_id = $1 AND scope_kind = $2 AND scope_id = $3
            AND (client_access OR NOT $4)",
    )
    .bind(company)
    .bind(scope.kind)
    .bind(scope.id)
    .bind(clients)
    .fetch_one(pool)
    .await
}

/// The department tables that hold a grant for the room, oldest first.
pub async fn shared_with_room(
    pool: &PgPool,
    company: Uuid,
    room: Uuid,
) -> sqlx::Result<Vec<TableRow>> {
    sqlx::query_as(&format!(
        "{TABLE} WHERE t.company_id = $1 AND t.scope_kind = 'department'
            AND EXISTS (SELECT 1 FROM custom_table_grants g
                         WHERE g.table_id = t.id AND g.subject_kind = 'chatroom' AND g.subject_id = $2)
          ORDER BY t.created_at, t.id"
    ))
    .bind(company)
    .bind(room)
    .fetch_all(pool)
    .await
}

/// The columns of a table, in order.
pub async fn columns(pool: &PgPool, table: Uuid) -> sqlx::Result<Vec<ColumnDef>> {
    let rows: Vec<(Json<ColumnDef>,)> = sqlx::query_as(
        "SELECT definition FROM custom_table_columns WHERE table_id = $1 ORDER BY position",
    )
    .bind(table)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|(c,)| c.0).collect())
}

/// A stored view of a table.
pub async fn view(
    pool: &PgPool,
    table: Uuid,
    view: Uuid,
) -> sqlx::Result<Option<domain::tables::table::ViewDef>> {
    let row: Option<(Json<domain::tables::table::ViewDef>,)> =
        sqlx::query_as("SELECT definition FROM custom_table_views WHERE table_id = $1 AND id = $2")
            .bind(table)
            .bind(view)
            .fetch_optional(pool)
            .await?;
    Ok(row.map(|(v,)| v.0))
}

/// Whether a live record of the table holds attachment file `blob_id`.
pub async fn blob_held(pool: &PgPool, table_id: Uuid, blob_id: &str) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM custom_table_blob_holders WHERE table_id = $1 AND blob_id = $2)",
    )
    .bind(table_id)
    .bind(blob_id)
    .fetch_one(pool)
    .await
}

/// A saved trigger (`custom_table_triggers`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TriggerRow {
    /// The definition, columns by internal key.
    pub definition: Json<Trigger>,
    /// When the trigger was first saved.
    pub created_at: DateTime<Utc>,
    /// When its definition last changed.
    pub updated_at: DateTime<Utc>,
}

/// A table's triggers, in the order of its set.
pub async fn triggers(pool: &PgPool, table_id: Uuid) -> sqlx::Result<Vec<TriggerRow>> {
    sqlx::query_as(
        "SELECT definition, created_at, updated_at FROM custom_table_triggers
          WHERE table_id = $1 ORDER BY position",
    )
    .bind(table_id)
    .fetch_all(pool)
    .await
}

/// A table's approval rules, in set order.
pub async fn rules(
    pool: &PgPool,
    table_id: Uuid,
) -> sqlx::Result<Vec<domain::tables::rule::ApprovalRule>> {
    let rows: Vec<Json<domain::tables::rule::ApprovalRule>> = sqlx::query_scalar(
        "SELECT definition FROM custom_table_rules WHERE table_id = $1 ORDER BY position",
    )
    .bind(table_id)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().map(|r| r.0).collect())
}

/// Which of these tables a social media client unlocked with their passphrase.
pub async fn unlocked(pool: &PgPool, client: Uuid, tables: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT table_id FROM custom_table_client_unlocks WHERE client_id = $1 AND table_id = ANY($2)",
    )
    .bind(client)
    .bind(tables)
    .fetch_all(pool)
    .await
}
