//! `POST /chatrooms/{cid}/runs` (manual submission) and
//! `POST /chatrooms/{cid}/runs/{rid}/retry`. Both need an `Idempotency-Key`; the
//! run's id is derived from it, so a repeated request replays the same run.

use super::admission::{
    Admission, admit, check_timeout, not_stageable, replayed_retry, stage, staged_input,
};
use super::views::{
    SandboxManualRunSubmitRequest, SandboxRunDetailResponse, SandboxRunRetryRequest,
};
use crate::access::{Room, Run, TaskVersion};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::parse_json;
use crate::idempotency::IdempotencyKey;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use bytes::Bytes;
use domain::error::Code;
use domain::runs::run::SubmissionSource;
use domain::tasks::input::{self, InputLimits};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The submission routes (the caller guards their body size).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(submit_run))
        .routes(routes!(retry_run))
}

/// The bounds of a request body that carries an input: the input's plus room for
/// the other fields.
fn envelope_limits() -> InputLimits {
    let limits = InputLimits::default();
    InputLimits {
        max_bytes: limits.max_bytes + 4096,
        max_depth: limits.max_depth + 1,
        max_nodes: limits.max_nodes + 8,
    }
}

/// Submits a run of a published version shared to the room.
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/runs", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("Idempotency-Key" = String, Header)),
    request_body = SandboxManualRunSubmitRequest,
    responses((status = 200, body = SandboxRunDetailResponse)))]
async fn submit_run(
    caller: Caller,
    key: IdempotencyKey,
    ApiPath(chatroom_id): ApiPath<Uuid>,
    body: Bytes,
) -> ApiResult<Json<SandboxRunDetailResponse>> {
    input::parse_value(&body, envelope_limits()).map_err(not_stageable)?;
    let request: SandboxManualRunSubmitRequest = parse_json(&body)?;
    let staged = stage(&caller, request.input).await?;
    let room = Room::visible(&caller, chatroom_id).await?;
    let version = TaskVersion::runnable(&caller, request.task_version_id).await?;
    let timeout = check_timeout(
        request
            .timeout_seconds
            .unwrap_or(version.contents.timeout_seconds),
    )?;
    let admission = Admission {
        run_id: key.target(&caller.principal, "runs.submit"),
        room: &room,
        version: &version,
        input: &staged,
        timeout_seconds: timeout,
        source: SubmissionSource::Rest,
        retry_of_run_id: None,
        share_required: true,
        request_facts: None,
    };
    Ok(Json(admit(&caller, admission).await?))
}

fn retry_input_unavailable() -> ApiError {
    ApiError::code(
        Code::RetryInputUnavailable,
        "the source run's input cannot be replayed; send an explicit input",
    )
}

/// Retries a terminal run: the same version pin, a new run; no body, `{}` or
/// `{input: null}` replays the retained input bit for bit.
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/runs/{run_id}/retry", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path), ("Idempotency-Key" = String, Header)),
    request_body = SandboxRunRetryRequest,
    responses((status = 200, body = SandboxRunDetailResponse)))]
async fn retry_run(
    caller: Caller,
    key: IdempotencyKey,
    ApiPath((chatroom_id, run_id)): ApiPath<(Uuid, Uuid)>,
    body: Bytes,
) -> ApiResult<Json<SandboxRunDetailResponse>> {
    let request: SandboxRunRetryRequest = if body.iter().all(u8::is_ascii_whitespace) {
        SandboxRunRetryRequest::default()
    } else {
        input::parse_value(&body, envelope_limits()).map_err(not_stageable)?;
        parse_json(&body)?
    };
    let fresh = match request.input {
        Some(value) if !value.is_null() => Some(stage(&caller, value).await?),
        _ => None,
    };
    let Run { room, row: source } = Run::in_room(&caller, chatroom_id, run_id).await?;
    let quick_run = source.submission_source == SubmissionSource::QuickRun;
    if quick_run && !room.manager {
        // A Quick Run is a room manager's; so is running its scripts again.
        return Err(ApiError::Forbidden(crate::access::INSUFFICIENT));
    }
    if !source.status.terminal() {
        return Err(ApiError::code(
            Code::RetryNotEligible,
            "only a run in a terminal state can be retried",
        ));
    }
    let retry_id = key.target(&caller.principal, &format!("runs.retry.{run_id}"));
    if fresh.is_none()
        && let Some(replay) = replayed_retry(&caller, retry_id, room.id, &source).await?
    {
        return Ok(Json(replay));
    }
    let version = TaskVersion::runnable(&caller, source.task_version_id).await?;
    let staged = match fresh {
        Some(staged) => staged,
        None if !source.content_active() => return Err(retry_input_unavailable()),
        None => staged_input(
            &caller.state,
            caller.principal.company_id,
            &source.input_key,
            &source.input_digest,
        )
        .await?
        .ok_or_else(retry_input_unavailable)?,
    };
    let admission = Admission {
        run_id: retry_id,
        room: &room,
        version: &version,
        input: &staged,
        timeout_seconds: source.timeout_seconds,
        source: source.submission_source,
        retry_of_run_id: Some(run_id),
        share_required: !quick_run,
        request_facts: None,
    };
    Ok(Json(admit(&caller, admission).await?))
}
