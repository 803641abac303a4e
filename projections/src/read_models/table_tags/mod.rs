//! The `table_tags` projection: the tags of each scope (`custom_table_tags`) and
//! the tables carrying them (`custom_table_tag_tables`).

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::tables::tag::{TableTag, TagEvent};
use sqlx::PgConnection;

/// Projects [`TableTag`].
pub struct TableTagsProjection;

#[async_trait]
impl Projection for TableTagsProjection {
    fn name(&self) -> &'static str {
        "table_tags"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["custom_table_tags", "custom_table_tag_tables"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["custom_table_tag"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            let at = event.time();
            let Some(tag) = event.decode::<TableTag>()? else {
                continue;
            };
            match tag {
                TagEvent::TagCreated(t) => {
                    sqlx::query(
                        "INSERT INTO custom_table_tags
                            (id, company_id, scope_kind, scope_id, name, description, color, system, created_by, created_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) ON CONFLICT (id) DO NOTHING",
                    )
                    .bind(t.tag_id)
                    .bind(t.company_id)
                    .bind(t.scope.kind.as_str())
                    .bind(t.scope.id)
                    .bind(&t.name)
                    .bind(&t.description)
                    .bind(&t.color)
                    .bind(&t.system)
                    .bind(&t.created_by)
                    .bind(at)
                    .execute(&mut *conn)
                    .await?;
                }
                TagEvent::TagUpdated {
                    tag_id,
                    name,
                    description,
                    color,
                } => {
                    sqlx::query(
                        "UPDATE custom_table_tags SET name = $2, description = $3, color = $4 WHERE id = $1",
                    )
                    .bind(tag_id)
                    .bind(name)
                    .bind(description)
                    .bind(color)
                    .execute(&mut *conn)
                    .await?;
                }
                TagEvent::TagAttached { tag_id, table_id } => {
                    sqlx::query(
                        "INSERT INTO custom_table_tag_tables (tag_id, table_id, attached_at)
                         VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                    )
                    .bind(tag_id)
                    .bind(table_id)
                    .bind(at)
                    .execute(&mut *conn)
                    .await?;
                }
                TagEvent::TagDetached { tag_id, table_id } => {
                    sqlx::query(
                        "DELETE FROM custom_table_tag_tables WHERE tag_id = $1 AND table_id = $2",
                    )
                    .bind(tag_id)
                    .bind(table_id)
                    .execute(&mut *conn)
                    .await?;
                }
            }
        }
        Ok(())
    }
}
