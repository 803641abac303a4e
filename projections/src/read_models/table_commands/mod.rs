//! The `table_commands` projection: the current version of every custom-table
//! Command, with its whole definition, and the agent delivery markers of write
//! Commands.

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::tables::agent_delivery::{AgentDelivery, DeliveryEvent};
use domain::tables::command::{CommandEvent, TableOperation};
use sqlx::PgConnection;
use sqlx::types::Json;

/// Projects [`TableOperation`] and [`AgentDelivery`].
pub struct TableCommandsProjection;

#[async_trait]
impl Projection for TableCommandsProjection {
    fn name(&self) -> &'static str {
        "table_commands"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["custom_table_commands", "custom_table_agent_deliveries"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["custom_table_command", "custom_table_agent_delivery"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            if let Some(delivery) = event.decode::<AgentDelivery>()? {
                apply_delivery(conn, event, delivery).await?;
                continue;
            }
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

async fn apply_delivery(
    conn: &mut PgConnection,
    event: &StoredEvent,
    decoded: DeliveryEvent,
) -> anyhow::Result<()> {
    match decoded {
        DeliveryEvent::DeliveryMarked(marker) => {
            sqlx::query(
                "INSERT INTO custom_table_agent_deliveries (id, company_id, command_id, agent,
                        key, record_id, op, marked_at, expires_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT (id) DO NOTHING",
            )
            .bind(marker.marker_id)
            .bind(marker.company_id)
            .bind(marker.command_id)
            .bind(&marker.agent)
            .bind(&marker.key)
            .bind(marker.record_id)
            .bind(&marker.op)
            .bind(event.time())
            .bind(marker.expires_at)
            .execute(&mut *conn)
            .await?;
        }
        DeliveryEvent::DeliveryAcknowledged { marker_id, reason } => {
            sqlx::query(
                "UPDATE custom_table_agent_deliveries
                    SET acknowledged_at = $2, acknowledged_by = $3 WHERE id = $1",
            )
            .bind(marker_id)
            .bind(event.time())
            .bind(&reason)
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(())
}
