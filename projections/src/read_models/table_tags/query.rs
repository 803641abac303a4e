//! Reads of the `table_tags` read model.

use chrono::{DateTime, Utc};
use domain::tables::scope::ScopeRef;
use sqlx::PgPool;
use uuid::Uuid;

/// A tag of a scope with the live tables carrying it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TagRow {
    /// The tag.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// `#rrggbb`.
    pub color: Option<String>,
    /// The deployment system whose tag it is.
    pub system: Option<String>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// The live tables carrying it, in the order they got it.
    pub table_ids: Vec<Uuid>,
}

const TAG: &str = "SELECT g.id, g.name, g.description, g.color, g.system, g.created_at,
        coalesce((SELECT array_agg(a.table_id ORDER BY a.attached_at, a.table_id)
                    FROM custom_table_tag_tables a JOIN custom_tables t ON t.id = a.table_id
                   WHERE a.tag_id = g.id), '{}') AS table_ids
   FROM custom_table_tags g";

/// The tags of a scope, oldest first.
pub async fn scope_tags(
    pool: &PgPool,
    company: Uuid,
    scope: ScopeRef,
) -> sqlx::Result<Vec<TagRow>> {
    sqlx::query_as(&format!(
        "{TAG} WHERE g.company_id = $1 AND g.scope_kind = $2 AND g.scope_id = $3 ORDER BY g.created_at, g.id"
    ))
    .bind(company)
    .bind(scope.kind.as_str())
    .bind(scope.id)
    .fetch_all(pool)
    .await
}

/// A tag of a scope.
pub async fn tag(
    pool: &PgPool,
    company: Uuid,
    scope: ScopeRef,
    id: Uuid,
) -> sqlx::Result<Option<TagRow>> {
    sqlx::query_as(&format!(
        "{TAG} WHERE g.company_id = $1 AND g.scope_kind = $2 AND g.scope_id = $3 AND g.id = $4"
    ))
    .bind(company)
    .bind(scope.kind.as_str())
    .bind(scope.id)
    .bind(id)
    .fetch_optional(pool)
    .await
}

/// The tag of a scope with this name (names are unique in a scope), if any.
pub async fn named(
    pool: &PgPool,
    company: Uuid,
    scope: ScopeRef,
    name: &str,
) -> sqlx::Result<Option<Uuid>> {
    sqlx::query_scalar(
        "SELECT id FROM custom_table_tags
          WHERE company_id = $1 AND scope_kind = $2 AND scope_id = $3 AND lower(name) = lower($4)",
    )
    .bind(company)
    .bind(scope.kind.as_str())
    .bind(scope.id)
    .bind(name.trim())
    .fetch_optional(pool)
    .await
}
