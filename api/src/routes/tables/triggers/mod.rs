//! Table triggers (issue 22 contract, [docs/triggers.md]): `PUT` and `GET
//! .../tables/{table_id}/triggers` replace and read a table's whole trigger set,
//! `GET .../triggers/schedule-preview` shows when a schedule fires. Table
//! moderators only. Trigger runs: [`runs`] lists them, [`fire`] creates them and
//! [`runner`] runs them.

mod dates;
pub mod fire;
mod runner;
mod runs;
mod schedules;

pub use runs::TriggerRunResponse;

use super::gates::Operation;
use super::scope::{Mount, open_table};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use chrono::{DateTime, Utc};
use domain::tables::TableError;
use domain::tables::table::TableCommand;
use domain::tables::trigger::{Schedule, ScheduleError, Trigger};
use projections::read_models::tables::query as tables;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Fire times a preview shows at most.
pub const PREVIEW_COUNT: (usize, usize) = (1, 50);

/// The trigger routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(get_triggers, put_triggers))
        .routes(routes!(schedule_preview))
        .merge(runs::router())
}

/// A table's whole trigger set.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TriggerSet {
    /// Every trigger of the table; one missing here is deleted.
    #[schema(schema_with = crate::openapi::shapes::triggers)]
    pub triggers: Vec<Trigger>,
}

/// A saved trigger: its definition (columns by internal key) and server fields.
#[derive(Debug, Serialize, ToSchema)]
pub struct TriggerResponse {
    /// `{id, name, enabled, on, schedule, when, actions}`.
    #[serde(flatten)]
    #[schema(value_type = Object)]
    pub definition: Trigger,
    /// When it was first saved.
    pub created_at: DateTime<Utc>,
    /// When its definition last changed.
    pub updated_at: DateTime<Utc>,
    /// The next fire of an enabled `cron`, `interval` or `daily` schedule; null for
    /// event and `date_column_reached` triggers.
    pub next_fire_at: Option<DateTime<Utc>>,
}

/// The trigger set as saved.
#[derive(Debug, Serialize, ToSchema)]
pub struct TriggerSetResponse {
    /// In the order of the set.
    pub triggers: Vec<TriggerResponse>,
}

async fn saved(caller: &Caller, table_id: Uuid) -> ApiResult<TriggerSetResponse> {
    let now = caller.ctx.time;
    let rows = tables::triggers(caller.pool(), table_id).await?;
    Ok(TriggerSetResponse {
        triggers: rows
            .into_iter()
            .map(|row| {
                let trigger = row.definition.0;
                let next_fire_at = trigger
                    .schedule
                    .as_ref()
                    .filter(|_| trigger.enabled)
                    .and_then(|s| s.fires_after(now, 1).ok())
                    .and_then(|fires| fires.first().copied());
                TriggerResponse {
                    definition: trigger,
                    created_at: row.created_at,
                    updated_at: row.updated_at,
                    next_fire_at,
                }
            })
            .collect(),
    })
}

/// The table's triggers.
#[utoipa::path(get, path = "/tables/{table_id}/triggers", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = TriggerSetResponse)))]
async fn get_triggers(caller: Caller, mount: Mount) -> ApiResult<Json<TriggerSetResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    Ok(Json(saved(&caller, table.row.id).await?))
}

/// Replaces the table's whole trigger set.
#[utoipa::path(put, path = "/tables/{table_id}/triggers", tag = "custom_tables", request_body = TriggerSet,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = TriggerSetResponse)))]
async fn put_triggers(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<TriggerSet>,
) -> ApiResult<Json<TriggerSetResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    table
        .execute(TableCommand::SetTriggers {
            triggers: body.triggers,
            saved_by: caller.principal.reference(),
        })
        .await?;
    Ok(Json(saved(&caller, table.row.id).await?))
}

/// A saved trigger, or an unsaved schedule, and where to start.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct PreviewQuery {
    /// A saved schedule trigger of the table.
    pub trigger_id: Option<String>,
    /// An unsaved schedule: `cron`, `interval` or `daily`.
    #[serde(rename = "type")]
    #[param(rename = "type")]
    pub schedule_type: Option<String>,
    /// cron: the expression.
    pub expression: Option<String>,
    /// cron, daily: IANA timezone.
    pub timezone: Option<String>,
    /// interval: window length in seconds.
    pub every_seconds: Option<i64>,
    /// interval: the first window's start.
    pub anchor_at: Option<DateTime<Utc>>,
    /// daily: `HH:MM`.
    pub at: Option<String>,
    /// Fires strictly after this instant (default now).
    pub from: Option<DateTime<Utc>>,
    /// How many fires (1..50, default 10).
    #[param(minimum = 1, maximum = 50)]
    pub count: Option<usize>,
}

/// The next fire times.
#[derive(Debug, Serialize, ToSchema)]
pub struct SchedulePreviewResponse {
    /// UTC instants, strictly after `from`, ascending.
    pub fires: Vec<DateTime<Utc>>,
}

fn config(message: impl Into<String>) -> ApiError {
    ApiError::from(TableError::TriggerConfig(message.into()))
}

/// The unsaved schedule the query describes.
fn unsaved(query: &PreviewQuery) -> ApiResult<Schedule> {
    let missing = |field: &str| config(format!("{field} is required for this schedule type"));
    let schedule = match query.schedule_type.as_deref() {
        Some("cron") => Schedule::Cron {
            expression: query
                .expression
                .clone()
                .ok_or_else(|| missing("expression"))?,
            timezone: query.timezone.clone().ok_or_else(|| missing("timezone"))?,
        },
        Some("interval") => Schedule::Interval {
            every_seconds: query
                .every_seconds
                .ok_or_else(|| missing("every_seconds"))?,
            anchor_at: query.anchor_at,
        },
        Some("daily") => Schedule::Daily {
            at: query.at.clone().ok_or_else(|| missing("at"))?,
            timezone: query.timezone.clone().ok_or_else(|| missing("timezone"))?,
        },
        _ => {
            return Err(config(
                "give trigger_id, or type cron, interval or daily with its fields",
            ));
        }
    };
    schedule.check(&[]).map_err(|e| match e {
        ScheduleError::Cron(message) => ApiError::from(TableError::InvalidCron(message)),
        ScheduleError::Invalid(message) => config(message),
    })
}

/// When a saved or unsaved schedule fires next (a read-only diagnostic).
#[utoipa::path(get, path = "/tables/{table_id}/triggers/schedule-preview", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), PreviewQuery),
    responses((status = 200, body = SchedulePreviewResponse)))]
async fn schedule_preview(
    caller: Caller,
    mount: Mount,
    ApiQuery(query): ApiQuery<PreviewQuery>,
) -> ApiResult<Json<SchedulePreviewResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let count = query.count.unwrap_or(10);
    if !(PREVIEW_COUNT.0..=PREVIEW_COUNT.1).contains(&count) {
        return Err(config(format!(
            "count must be {}..{}",
            PREVIEW_COUNT.0, PREVIEW_COUNT.1
        )));
    }
    let schedule = match &query.trigger_id {
        Some(id) => tables::triggers(caller.pool(), table.row.id)
            .await?
            .into_iter()
            .map(|row| row.definition.0)
            .find(|t| &t.id == id)
            .ok_or(ApiError::NotFound)?
            .schedule
            .ok_or_else(|| {
                config(format!(
                    "trigger '{id}' fires on record events, not a schedule"
                ))
            })?,
        None => unsaved(&query)?,
    };
    let from = query.from.unwrap_or(caller.ctx.time);
    let fires = schedule.fires_after(from, count).map_err(config)?;
    Ok(Json(SchedulePreviewResponse { fires }))
}
