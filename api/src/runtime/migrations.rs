//! Background column migrations: fill the rewritten column outside the pump in short
//! transactions, then issue `CompleteMigration`, whose event swaps the column in
//! (see `projections::read_models::tables::rewrite`). A process that stopped before
//! completing resumes at start ([`resume`]).

use crate::runtime::Runtime;
use chrono::Utc;
use domain::principal::{Actor, EventMetadata};
use domain::tables::table::{CustomTable, TableCommand};
use projections::read_models::tables::rewrite;
use std::sync::Arc;
use uuid::Uuid;

/// The migration to complete.
#[derive(Debug, Clone)]
pub struct Migration {
    /// Its company.
    pub company_id: Uuid,
    /// Its table.
    pub table_id: Uuid,
    /// The migration.
    pub migration_id: Uuid,
    /// The request that started it (or `resume`).
    pub request_id: String,
}

fn metadata(migration: &Migration) -> EventMetadata {
    EventMetadata {
        actor: Actor::System("custom_tables.migrations"),
        company_id: Some(migration.company_id),
        request_id: migration.request_id.clone(),
        time: Utc::now(),
    }
}

/// Fills the migration's rewritten column, then completes it.
pub async fn complete(state: Arc<Runtime>, migration: Migration) {
    let stop = || state.shutdown.is_cancelled();
    match rewrite::fill(&state.pool, migration.migration_id, stop).await {
        Ok(Some(filled)) => tracing::info!(
            migration_id = %migration.migration_id,
            rows = filled.rows,
            batches = filled.batches,
            "background migration filled"
        ),
        Ok(None) => {}
        Err(error) => {
            tracing::error!(error = format!("{error:#}"), migration_id = %migration.migration_id,
                "filling a background migration failed; it resumes at the next start");
            return;
        }
    }
    let command = TableCommand::CompleteMigration {
        migration_id: migration.migration_id,
    };
    let result = state
        .bus
        .record::<CustomTable>(
            &migration.table_id.to_string(),
            command,
            &metadata(&migration),
        )
        .await;
    if let Err(error) = result {
        tracing::error!(%error, migration_id = %migration.migration_id, "completing a background migration failed");
    }
}

/// Completes background migrations a previous process left running.
pub async fn resume(state: Arc<Runtime>) {
    let pending: Result<Vec<(Uuid, Uuid, Uuid)>, sqlx::Error> = sqlx::query_as(
        "SELECT m.id, t.id, t.company_id FROM custom_table_migrations m
           JOIN custom_tables t ON t.migration_id = m.id
          WHERE m.completed_at IS NULL",
    )
    .fetch_all(&state.pool)
    .await;
    match pending {
        Ok(rows) => {
            for (migration_id, table_id, company_id) in rows {
                let migration = Migration {
                    company_id,
                    table_id,
                    migration_id,
                    request_id: "resume".into(),
                };
                complete(state.clone(), migration).await;
            }
        }
        Err(error) => tracing::error!(%error, "cannot look for unfinished migrations"),
    }
}
