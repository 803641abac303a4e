//! Reading and cancelling runs: `GET /chatrooms/{cid}/runs` (newest first, cursor on
//! `(queued_at, id)`, repeatable `status[]`), `GET .../runs/{rid}`, its `content`
//! flags and `POST .../runs/{rid}/cancel`.

use super::detail::{detail, detail_of, details};
use super::views::*;
use crate::access::{Room, Run};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::ApiQuery;
use crate::openapi::enums::RunStatusNames;
use crate::pagination::PageQuery;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::runs::run::{Run as RunAggregate, RunCommand, RunStatus};
use domain::wire::{from_wire, wire};
use projections::read_models::runs::query::{self as runs, Submitter};
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
    #[param(value_type = Vec<RunStatusNames>, inline)]
    pub status: Vec<String>,
}

/// A repeatable `status[]` filter as run statuses; any other value (however
/// unusual its characters) is a 422 naming the accepted ones.
pub fn status_filter(names: &[String]) -> ApiResult<Vec<RunStatus>> {
    names
        .iter()
        .map(|name| {
            from_wire::<RunStatus>(name).ok_or_else(|| {
                ApiError::invalid(
                    &["query", "status[]"],
                    domain::validation::ViolationKind::Enum(
                        RunStatus::ALL.iter().map(wire).collect(),
                    ),
                    Some(name.clone().into()),
                )
            })
        })
        .collect()
}

/// The room's runs, newest first (a restricted key sees only its own).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/runs", tag = "runs",
    params(("chatroom_id" = Uuid, Path), RunListQuery),
    responses((status = 200, body = SandboxRunListResponse)))]
async fn list_runs(
    caller: Caller,
    ApiPath(chatroom_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<RunListQuery>,
) -> ApiResult<Json<SandboxRunListResponse>> {
    let page = PageQuery {
        page_size: query.page_size,
        page_token: query.page_token.clone(),
    }
    .page(20)?;
    let statuses = status_filter(&query.status)?;
    let room = Room::visible(&caller, chatroom_id).await?;
    let submitter = match caller.principal.is_restricted() {
        true => Submitter::Key(caller.principal.api_key_id),
        false => Submitter::Anyone,
    };
    let company = caller.principal.company_id;
    let room_runs =
        async |w| runs::room_runs(caller.pool(), company, room.id, &statuses, submitter, w).await;
    let listed = page.fetch(room_runs, |r| (r.queued_at, r.id)).await?;
    Ok(Json(details(&caller.state, listed).await?))
}

/// One run (poll until `terminal_at`).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/runs/{run_id}", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
    responses((status = 200, body = SandboxRunDetailResponse)))]
async fn get_run(
    caller: Caller,
    ApiPath((chatroom_id, run_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxRunDetailResponse>> {
    let run = Run::in_room(&caller, chatroom_id, run_id).await?;
    Ok(Json(detail(&caller.state, run.row).await?))
}

/// Which contents the run has (flags only).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/runs/{run_id}/content", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
    responses((status = 200, body = SandboxRunContentResponse)))]
async fn run_content(
    caller: Caller,
    ApiPath((chatroom_id, run_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxRunContentResponse>> {
    let row = Run::in_room(&caller, chatroom_id, run_id).await?.row;
    let active = row.content_active();
    Ok(Json(SandboxRunContentResponse {
        has_input: active,
        has_output: active && row.output_key.is_some(),
        has_log: active && row.log_key.is_some(),
        has_artifact_bundle: active && row.bundle_key.is_some(),
        state: wire(&row.content_state),
        input_digest: row.input_digest,
    }))
}

/// Cancels a run the caller can read: a queued run at once, a started one by
/// killing its container (`cancel_requested` until the worker reports).
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/runs/{run_id}/cancel", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
    responses((status = 200, body = SandboxRunDetailResponse)))]
async fn cancel_run(
    caller: Caller,
    ApiPath((chatroom_id, run_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxRunDetailResponse>> {
    Run::in_room(&caller, chatroom_id, run_id).await?;
    caller
        .command::<RunAggregate>(run_id, RunCommand::Cancel)
        .await?;
    Ok(Json(detail_of(&caller.state, run_id).await?))
}
