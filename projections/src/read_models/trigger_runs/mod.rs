//! The `trigger_runs` projection: every firing of a table trigger and how it ended
//! (`custom_table_trigger_runs`).

pub mod query;

use super::{RowSet, Table};
use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::tables::trigger::run::{TriggerRun, TriggerRunEvent, TriggerRunStatus};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;
use uuid::Uuid;

const RUNS: Table = Table {
    name: "custom_table_trigger_runs",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("table_id", "uuid"),
        ("trigger_id", "text"),
        ("status", "text"),
        ("record_id", "uuid"),
        ("window_start", "timestamptz"),
        ("author", "text"),
        ("definition", "jsonb"),
        ("error", "text"),
        ("sandbox_run_ids", "uuid[]"),
        ("created_at", "timestamptz"),
        ("updated_at", "timestamptz"),
    ],
};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
struct Id {
    id: Uuid,
}

/// A trigger run (`custom_table_trigger_runs`).
#[derive(Debug, Clone, Serialize, Deserialize)]
struct RunRow {
    id: Uuid,
    company_id: Uuid,
    table_id: Uuid,
    trigger_id: String,
    status: TriggerRunStatus,
    record_id: Option<Uuid>,
    window_start: Option<DateTime<Utc>>,
    author: String,
    definition: Value,
    error: Option<String>,
    sandbox_run_ids: Vec<Uuid>,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
}

/// Projects [`TriggerRun`].
pub struct TriggerRunsProjection;

#[async_trait]
impl Projection for TriggerRunsProjection {
    fn name(&self) -> &'static str {
        "trigger_runs"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["custom_table_trigger_runs"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["custom_table_trigger_run"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut changes = Vec::new();
        for event in events {
            if let Some(change) = event.decode::<TriggerRun>()? {
                let id: Uuid = event.aggregate_id.parse().context("trigger run id")?;
                changes.push((id, change, event.time()));
            }
        }
        let keys: Vec<Id> = changes
            .iter()
            .filter(|(_, e, _)| !matches!(e, TriggerRunEvent::TriggerRunCreated(_)))
            .map(|(id, _, _)| Id { id: *id })
            .collect();
        let loaded: Vec<RunRow> = RUNS.load(conn, &keys).await?;
        let mut rows = RowSet::loaded(loaded.into_iter().map(|r| (Id { id: r.id }, r)));
        for (id, event, at) in changes {
            match event {
                TriggerRunEvent::TriggerRunCreated(run) => {
                    rows.upsert_with(Id { id }, || RunRow {
                        id,
                        company_id: run.company_id,
                        table_id: run.table_id,
                        trigger_id: run.trigger.id.clone(),
                        status: TriggerRunStatus::Pending,
                        record_id: run.record_id,
                        window_start: run.window_start,
                        author: run.author.clone(),
                        definition: serde_json::to_value(&run.trigger).unwrap_or(Value::Null),
                        error: None,
                        sandbox_run_ids: Vec::new(),
                        created_at: at,
                        updated_at: at,
                    });
                }
                event => {
                    if let Some(row) = rows.get_mut(&Id { id }) {
                        row.updated_at = at;
                        match event {
                            TriggerRunEvent::TriggerRunAwaiting { sandbox_run_ids } => {
                                row.status = TriggerRunStatus::Running;
                                row.sandbox_run_ids = sandbox_run_ids;
                            }
                            TriggerRunEvent::TriggerRunFailed { error } => {
                                row.status = TriggerRunStatus::Failed;
                                row.error = Some(error);
                            }
                            _ => row.status = TriggerRunStatus::Succeeded,
                        }
                    }
                }
            }
        }
        RUNS.store(conn, rows).await
    }
}
