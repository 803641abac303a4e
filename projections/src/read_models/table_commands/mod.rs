//! The `table_commands` projection: the current version of every custom-table
//! Command, with its whole definition.

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::tables::command::{CommandEvent, TableOperation};
use sqlx::PgConnection;
use sqlx::types::Json;

/// Projects [`TableOperation`].
pub struct TableCommandsProjection;

#[async_trait]
impl Projection for TableCommandsProjection {
    fn name(&self) -> &'static str {
        "table_commands"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["custom_table_commands"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["custom_table_command"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            let Some(decoded) = event.decode::<TableOperation>()? else {
                continue;
            };
            match decoded {
                CommandEvent::CommandDefined {
                    command_id,
                    company_id,
                    table_id,
                    scope,
                    definition,
                    version,
                    defined_by,
                } => {
                    sqlx::query(
                        "INSERT INTO custom_table_commands (id, company_id, table_id, scope_kind,
                                scope_id, name, kind, version, definition, defined_by,
                                created_at, updated_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $11)
                         ON CONFLICT (id) DO NOTHING",
                    )
                    .bind(command_id)
                    .bind(company_id)
                    .bind(table_id)
                    .bind(scope.kind.as_str())
                    .bind(scope.id)
                    .bind(&definition.name)
                    .bind(crate::read_models::wire(&definition.kind))
                    .bind(version)
                    .bind(Json(&definition))
                    .bind(&defined_by)
                    .bind(event.time())
                    .execute(&mut *conn)
                    .await?;
                }
                CommandEvent::CommandRedefined {
                    command_id,
                    definition,
                    version,
                    defined_by,
                    ..
                } => {
                    sqlx::query(
                        "UPDATE custom_table_commands
                            SET name = $2, kind = $3, version = $4, definition = $5,
                                defined_by = $6, updated_at = $7
                          WHERE id = $1",
                    )
                    .bind(command_id)
                    .bind(&definition.name)
                    .bind(crate::read_models::wire(&definition.kind))
                    .bind(version)
                    .bind(Json(&definition))
                    .bind(&defined_by)
                    .bind(event.time())
                    .execute(&mut *conn)
                    .await?;
                }
            }
        }
        Ok(())
    }
}
