//! Reading and cancelling runs: `GET /chatrooms/{cid}/runs` (newest first, cursor on
//! `(queued_at, id)`, repeatable `status[]`), `GET .../runs/{rid}`, its `content`
//! flags and `POST .../runs/{rid}/cancel`.

use super::access::{RUN_COLUMNS, RunRow, detail, detail_of, run_in_room};
use super::views::*;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::pagination::{PageQuery, finish};
use crate::request::Context;
use crate::routes::sandbox::bindings::enablement::visible_room;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use domain::runs::run::{Run, RunCommand};
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The read and cancel routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_runs))
        .routes(routes!(get_run))
        .routes(routes!(run_content))
        .routes(routes!(cancel_run))
}

/// Every run status.
const STATUSES: &[&str] = &[
    "queued",
    "starting",
    "running",
    "cancel_requested",
    "completed",
    "customer_failed",
    "platform_failed",
    "cancelled",
];

/// Query of the room's run list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct RunListQuery {
    /// Items per page, 1..100 (default 20).
    pub page_size: Option<i64>,
    /// Opaque cursor.
    pub page_token: Option<String>,
    /// Repeatable status filter.
    #[serde(rename = "status[]", alias = "status", default)]
    pub status: Vec<String>,
}

/// The room's runs, newest first (a restricted key sees only its own).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/runs", tag = "runs",
    params(("chatroom_id" = Uuid, Path), RunListQuery),
    responses((status = 200, body = SandboxRunListResponse), (status = 404, description = "room not visible"),
              (status = 422, description = "unknown status")))]
async fn list_runs(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(chatroom_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<RunListQuery>,
) -> ApiResult<Json<SandboxRunListResponse>> {
    let page = PageQuery {
        page_size: query.page_size,
        page_token: query.page_token.clone(),
    }
    .page::<(DateTime<Utc>, Uuid)>(20)?;
    if let Some(bad) = query
        .status
        .iter()
        .find(|s| !STATUSES.contains(&s.as_str()))
    {
        return Err(ApiError::invalid(
            &["query", "status[]"],
            domain::validation::ViolationKind::Enum(
                STATUSES.iter().map(|s| s.to_string()).collect(),
            ),
            Some(bad.clone().into()),
        ));
    }
    let room = visible_room(&state, &principal, chatroom_id).await?;
    let (after_time, after_id) = page
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    let own_key = principal
        .is_restricted()
        .then_some(principal.api_key_id)
        .flatten();
    let rows: Vec<RunRow> = sqlx::query_as(&format!(
        "SELECT {RUN_COLUMNS} FROM runs
          WHERE chatroom_id = $1 AND company_id = $2
            AND (cardinality($3::text[]) = 0 OR status = ANY($3))
            AND (NOT $4 OR api_key_id = $5)
            AND (queued_at, id) < ($6, $7)
          ORDER BY queued_at DESC, id DESC
          LIMIT $8"
    ))
    .bind(room.id)
    .bind(principal.company_id)
    .bind(&query.status)
    .bind(principal.is_restricted())
    .bind(own_key)
    .bind(after_time)
    .bind(after_id)
    .bind(page.size + 1)
    .fetch_all(&state.pool)
    .await?;
    let (rows, next_page_token) = finish(rows, page.size, |r| (r.queued_at, r.id));
    let mut items = Vec::with_capacity(rows.len());
    for row in rows {
        items.push(detail(&state, row).await?);
    }
    Ok(Json(SandboxRunListResponse {
        items,
        next_page_token,
    }))
}

/// One run (poll until `terminal_at`).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/runs/{run_id}", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
    responses((status = 200, body = SandboxRunDetailResponse), (status = 404, description = "not found")))]
async fn get_run(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path((chatroom_id, run_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxRunDetailResponse>> {
    let (_, row) = run_in_room(&state, &principal, chatroom_id, run_id).await?;
    Ok(Json(detail(&state, row).await?))
}

/// Which contents the run has (flags only).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/runs/{run_id}/content", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
    responses((status = 200, body = SandboxRunContentResponse), (status = 404, description = "not found")))]
async fn run_content(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path((chatroom_id, run_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxRunContentResponse>> {
    let (_, row) = run_in_room(&state, &principal, chatroom_id, run_id).await?;
    let active = row.content_state == "active";
    Ok(Json(SandboxRunContentResponse {
        has_input: active,
        has_output: active && row.output_key.is_some(),
        has_log: active && row.log_key.is_some(),
        has_artifact_bundle: active && row.bundle_key.is_some(),
        state: row.content_state,
        input_digest: row.input_digest,
    }))
}

/// Cancels a run the caller can read: a queued run at once, a started one by
/// killing its container (`cancel_requested` until the worker reports).
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/runs/{run_id}/cancel", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
    responses((status = 200, body = SandboxRunDetailResponse), (status = 404, description = "not found"),
              (status = 409, description = "not_cancellable")))]
async fn cancel_run(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((chatroom_id, run_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxRunDetailResponse>> {
    run_in_room(&state, &principal, chatroom_id, run_id).await?;
    state
        .bus
        .execute::<Run>(
            &run_id.to_string(),
            RunCommand::Cancel,
            &ctx.metadata(&principal),
        )
        .await?;
    Ok(Json(detail_of(&state, run_id).await?))
}
