//! `date_column_reached` triggers: a run once per (trigger, record, value) when
//! the record's date or datetime value plus `offset_seconds` is reached. A new
//! value re-arms the record; a value fired before never fires again, also after a
//! rebuild or when the runs are gone (`custom_table_trigger_fired_values` is not a
//! read model). Values reached before the trigger was first saved do not fire (no
//! backfill). A value whose record does not match the trigger's `when` at that
//! moment is passed over for good, as an event trigger's write would be.

use super::fire::{columns_of, create, matches_when};
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::tables::column::ColumnType;
use domain::tables::trigger::Schedule;
use domain::tables::trigger::run::{RunCreated, run_id_for_date};
use projections::read_models::trigger_runs::query::{self as runs, DateReach};
use std::collections::HashMap;
use uuid::Uuid;

/// Records one trigger fires for at most per pass (the rest fire at the next).
const BATCH: i64 = 500;

/// Creates the runs of the values reached by `now`; answers the new ones.
pub async fn fire(state: &AppState, now: DateTime<Utc>) -> anyhow::Result<Vec<Uuid>> {
    let mut columns = HashMap::new();
    let mut created = Vec::new();
    for row in runs::date_triggers(&state.pool).await? {
        let trigger = row.definition.0;
        let Some(Schedule::DateColumnReached {
            column,
            offset_seconds,
        }) = &trigger.schedule
        else {
            continue;
        };
        let table_columns = columns_of(state, &mut columns, row.table_id).await?;
        // A column deleted or retyped since reaches nothing.
        let Some(date) = table_columns
            .iter()
            .find(|c| &c.key == column)
            .and_then(|c| match c.column_type {
                ColumnType::Date => Some(true),
                ColumnType::Datetime => Some(false),
                _ => None,
            })
        else {
            continue;
        };
        let reach = DateReach {
            table_id: row.table_id,
            trigger_id: &trigger.id,
            column,
            date,
            offset_seconds: offset_seconds.unwrap_or(0),
            after: row.created_at,
            until: now,
        };
        let reached = runs::reached_dates(&state.pool, &reach, BATCH).await?;
        for (record_id, value) in reached {
            let matches = match &trigger.when {
                Some(when) => {
                    let table_columns = columns_of(state, &mut columns, row.table_id).await?;
                    matches_when(
                        state,
                        row.company_id,
                        row.table_id,
                        table_columns,
                        when,
                        record_id,
                    )
                    .await?
                }
                None => true,
            };
            if matches {
                let run = RunCreated {
                    run_id: run_id_for_date(row.table_id, &trigger.id, record_id, value),
                    company_id: row.company_id,
                    table_id: row.table_id,
                    trigger: trigger.clone(),
                    record_id: Some(record_id),
                    window_start: None,
                    author: row.saved_by.clone(),
                };
                created.extend(create(state, run).await?);
            }
            runs::mark_fired(&state.pool, row.table_id, &trigger.id, record_id, value).await?;
        }
    }
    Ok(created)
}
