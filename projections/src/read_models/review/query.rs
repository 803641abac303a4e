//! Queries of the review read models.

use chrono::{DateTime, Utc};
use domain::review::Gate;
use serde_json::{Map, Value};
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

/// A review group.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct GroupRow {
    /// The group.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Its users.
    pub member_ids: Vec<Uuid>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// A review template.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TemplateRow {
    /// The template.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Its gates.
    pub gates: Json<Vec<Gate>>,
    /// Whether approvals carry a signature.
    pub require_signature: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

/// A held callback write.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ChangeRow {
    /// The staged change.
    pub id: Uuid,
    /// Its review process.
    pub process_id: Uuid,
    /// The company.
    pub company_id: Uuid,
    /// The table.
    pub table_id: Uuid,
    /// The callback token.
    pub token_id: Uuid,
    /// `create` or `update`.
    pub op: String,
    /// The record it updates, or the id the created record takes.
    pub record_id: Uuid,
    /// The cells as sent.
    pub data: Json<Map<String, Value>>,
    /// The rule that held it.
    pub rule_id: String,
    /// The rule's label.
    pub rule_label: String,
    /// The rule's template.
    pub template_id: Uuid,
    /// The template's gates when it was held.
    pub gates: Json<Vec<Gate>>,
    /// Whether approvals carry a signature.
    pub require_signature: bool,
    /// The token's minting moderator or the Command's actor.
    pub author: String,
    /// `callback_token` or `command`: what `token_id` names.
    pub source: String,
    /// Gates passed (by position).
    pub passed: Vec<i32>,
    /// `pending`, `applied` or `rejected`.
    pub status: String,
    /// The last reviewer who decided.
    pub decided_by: Option<String>,
    /// Why it was rejected.
    pub reason: Option<String>,
    /// When it was held.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

const CHANGE: &str = "SELECT id, process_id, company_id, table_id, token_id, op, record_id, data, rule_id,
        rule_label, template_id, gates, require_signature, author, source, passed, status, decided_by,
        reason, created_at, updated_at FROM custom_table_staged_changes";

/// The company's groups, oldest first.
pub async fn groups(pool: &PgPool, company: Uuid) -> sqlx::Result<Vec<GroupRow>> {
    sqlx::query_as(
        "SELECT id, name, description, member_ids, created_at FROM review_groups
          WHERE company_id = $1 ORDER BY created_at, id",
    )
    .bind(company)
    .fetch_all(pool)
    .await
}

/// The company's groups among `ids`.
pub async fn groups_in(pool: &PgPool, company: Uuid, ids: &[Uuid]) -> sqlx::Result<Vec<GroupRow>> {
    sqlx::query_as(
        "SELECT id, name, description, member_ids, created_at FROM review_groups
          WHERE company_id = $1 AND id = ANY($2)",
    )
    .bind(company)
    .bind(ids)
    .fetch_all(pool)
    .await
}

/// The company's templates, oldest first.
pub async fn templates(pool: &PgPool, company: Uuid) -> sqlx::Result<Vec<TemplateRow>> {
    sqlx::query_as(
        "SELECT id, name, description, gates, require_signature, created_at FROM review_templates
          WHERE company_id = $1 ORDER BY created_at, id",
    )
    .bind(company)
    .fetch_all(pool)
    .await
}

/// One template of the company.
pub async fn template(pool: &PgPool, company: Uuid, id: Uuid) -> sqlx::Result<Option<TemplateRow>> {
    sqlx::query_as(
        "SELECT id, name, description, gates, require_signature, created_at FROM review_templates
          WHERE company_id = $1 AND id = $2",
    )
    .bind(company)
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// A held write of the company by its review process.
pub async fn change_by_process(
    pool: &PgPool,
    company: Uuid,
    process_id: Uuid,
) -> sqlx::Result<Option<ChangeRow>> {
    sqlx::query_as(&format!(
        "{CHANGE} WHERE company_id = $1 AND process_id = $2"
    ))
    .bind(company)
    .bind(process_id)
    .fetch_optional(pool)
    .await
}

/// A held write by id.
pub async fn change(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<ChangeRow>> {
    sqlx::query_as(&format!("{CHANGE} WHERE id = $1"))
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// The pending update waiting for a record, if any.
pub async fn pending_for_record(
    pool: &PgPool,
    table_id: Uuid,
    record_id: Uuid,
) -> sqlx::Result<Option<ChangeRow>> {
    sqlx::query_as(&format!(
        "{CHANGE} WHERE table_id = $1 AND record_id = $2 AND status = 'pending' AND op = 'update'
          ORDER BY created_at LIMIT 1"
    ))
    .bind(table_id)
    .bind(record_id)
    .fetch_optional(pool)
    .await
}

/// How many writes of a token are waiting.
pub async fn pending_of_token(pool: &PgPool, token_id: Uuid) -> sqlx::Result<i64> {
    sqlx::query_scalar(
        "SELECT count(*) FROM custom_table_staged_changes WHERE token_id = $1 AND status = 'pending'",
    )
    .bind(token_id)
    .fetch_one(pool)
    .await
}

/// The records of a table with a pending update.
pub async fn pending_records(pool: &PgPool, table_id: Uuid) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT DISTINCT record_id FROM custom_table_staged_changes
          WHERE table_id = $1 AND status = 'pending' AND op = 'update'",
    )
    .bind(table_id)
    .fetch_all(pool)
    .await
}

/// The company's pending writes whose gates name one of `groups`, oldest first.
pub async fn pending_for_groups(
    pool: &PgPool,
    company: Uuid,
    groups: &[Uuid],
) -> sqlx::Result<Vec<ChangeRow>> {
    sqlx::query_as(&format!(
        "{CHANGE} WHERE company_id = $1 AND status = 'pending'
            AND EXISTS (SELECT 1 FROM jsonb_array_elements(gates) g
                         WHERE (g->'condition'->>'group_id')::uuid = ANY($2))
          ORDER BY created_at, id"
    ))
    .bind(company)
    .bind(groups)
    .fetch_all(pool)
    .await
}

/// The groups of the company a user belongs to.
pub async fn groups_of_user(pool: &PgPool, company: Uuid, user: Uuid) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT id FROM review_groups WHERE company_id = $1 AND $2 = ANY(member_ids)",
    )
    .bind(company)
    .bind(user)
    .fetch_all(pool)
    .await
}
