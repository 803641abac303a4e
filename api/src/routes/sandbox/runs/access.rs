//! Who may read a run, and the run detail as the routes answer it.
//!
//! A run is read in its room: members and managers of the room read its runs; a
//! restricted key reads only the runs it submitted. Anything else is the uniform 404.

use super::views::SandboxRunDetailResponse;
use crate::directory::RoomStanding;
use crate::error::{ApiError, ApiResult};
use crate::routes::sandbox::bindings::enablement::visible_room;
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::catalog::Provider;
use domain::principal::Principal;
use uuid::Uuid;

/// A run row as the routes read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunRow {
    /// Id.
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// Room.
    pub chatroom_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Version.
    pub task_version_id: Uuid,
    /// Submitter kind.
    pub principal_type: String,
    /// Submitter.
    pub principal_id: Uuid,
    /// How it authenticated.
    pub auth_method: String,
    /// The key that submitted it.
    pub api_key_id: Option<Uuid>,
    /// Where it came from.
    pub submission_source: String,
    /// Inputs file digest.
    pub input_digest: String,
    /// Inputs file key.
    pub input_key: String,
    /// Timeout.
    pub timeout_seconds: i64,
    /// Profile.
    pub resource_profile: String,
    /// Retried run.
    pub retry_of_run_id: Option<Uuid>,
    /// Status.
    pub status: String,
    /// Why it did not complete.
    pub error_code: Option<String>,
    /// Stored log.
    pub log_key: Option<String>,
    /// Stored output.
    pub output_key: Option<String>,
    /// Stored bundle.
    pub bundle_key: Option<String>,
    /// `active` or `expired`.
    pub content_state: String,
    /// Queued.
    pub queued_at: DateTime<Utc>,
    /// Ended.
    pub terminal_at: Option<DateTime<Utc>>,
}

/// The columns of [`RunRow`].
pub const RUN_COLUMNS: &str = "id, company_id, chatroom_id, task_id, task_version_id, principal_type, \
     principal_id, auth_method, api_key_id, submission_source, input_digest, input_key, timeout_seconds, \
     resource_profile, retry_of_run_id, status, error_code, log_key, output_key, bundle_key, content_state, queued_at, \
     terminal_at";

/// Whether the caller may read the run (restricted keys: only their own).
pub fn readable_by(principal: &Principal, run: &RunRow) -> bool {
    !principal.is_restricted()
        || (run.api_key_id.is_some() && run.api_key_id == principal.api_key_id)
}

/// A run of a room the caller can see, readable by the caller.
pub async fn run_in_room(
    state: &AppState,
    principal: &Principal,
    room: Uuid,
    run: Uuid,
) -> ApiResult<(RoomStanding, RunRow)> {
    let room = visible_room(state, principal, room).await?;
    let row: Option<RunRow> = sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS} FROM runs WHERE id = $1 AND chatroom_id = $2 AND company_id = $3"
    ))
    .bind(run)
    .bind(room.id)
    .bind(principal.company_id)
    .fetch_optional(&state.pool)
    .await?;
    match row {
        Some(row) if readable_by(principal, &row) => Ok((room, row)),
        _ => Err(ApiError::NotFound),
    }
}

/// The queue position and ETA of a run: managed cloud counts the company's queued
/// runs (no ETA); on-prem counts the executor queue (`starting` included) and
/// estimates from the last 20 completed runs of the profile.
async fn queue_facts(state: &AppState, row: &RunRow) -> ApiResult<(Option<i64>, Option<i64>)> {
    let onprem = state.deployment.provider == Provider::Onprem;
    let waiting = if onprem {
        ["queued", "starting"].contains(&row.status.as_str())
    } else {
        row.status == "queued"
    };
    if !waiting {
        return Ok((None, None));
    }
    let position: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM runs
          WHERE ($1 OR company_id = $2) AND status = ANY($3)
            AND (queued_at, id) <= ($4, $5)",
    )
    .bind(onprem)
    .bind(row.company_id)
    .bind(if onprem {
        vec!["queued", "starting"]
    } else {
        vec!["queued"]
    })
    .bind(row.queued_at)
    .bind(row.id)
    .fetch_one(&state.pool)
    .await?;
    if !onprem {
        return Ok((Some(position), None));
    }
    let mean: Option<f64> = sqlx::query_scalar(
        "SELECT avg(extract(epoch FROM terminal_at - started_at))::float8 FROM (
            SELECT terminal_at, started_at FROM runs
             WHERE resource_profile = $1 AND status = 'completed' AND started_at IS NOT NULL
             ORDER BY terminal_at DESC LIMIT 20) recent",
    )
    .bind(&row.resource_profile)
    .fetch_one(&state.pool)
    .await?;
    let slots = state.builder.run_slots.max(1) as i64;
    let eta = mean.map(|mean| ((position + slots - 1) / slots) * mean.ceil() as i64);
    Ok((Some(position), eta))
}

/// The detail of a run.
pub async fn detail(state: &AppState, row: RunRow) -> ApiResult<SandboxRunDetailResponse> {
    let (queue_position, eta_seconds) = queue_facts(state, &row).await?;
    Ok(SandboxRunDetailResponse {
        id: row.id,
        company_id: row.company_id,
        chatroom_id: row.chatroom_id,
        status: row.status,
        resource_profile: row.resource_profile,
        principal_type: row.principal_type,
        principal_id: row.principal_id,
        auth_method: row.auth_method,
        task_id: row.task_id,
        task_version_id: row.task_version_id,
        timeout_seconds: row.timeout_seconds,
        submission_source: row.submission_source,
        input_digest: row.input_digest,
        retry_of_run_id: row.retry_of_run_id,
        error_code: row.error_code,
        queue_position,
        eta_seconds,
        queued_at: Some(row.queued_at),
        terminal_at: row.terminal_at,
        secret_slot_provenance: None,
    })
}

/// Loads a run by id (after a command) and answers its detail.
pub async fn detail_of(state: &AppState, id: Uuid) -> ApiResult<SandboxRunDetailResponse> {
    let row: RunRow = sqlx::query_as(&format!("SELECT {RUN_COLUMNS} FROM runs WHERE id = $1"))
        .bind(id)
        .fetch_optional(&state.pool)
        .await?
        .ok_or(ApiError::NotFound)?;
    detail(state, row).await
}
