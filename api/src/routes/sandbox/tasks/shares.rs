//! Share grants of a task (`/tasks/{id}/shares`): the owner shares a task with a
//! live room, department or the company of its own company, lists the grants
//! (every lifecycle by default) and revokes them. One grant per task and target is
//! live at a time; the Share aggregate keyed by the target makes that race-free.

use super::access::owned_task;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery, OptionalJson};
use crate::pagination::{LifecycleFilter, LifecycleQuery, finish};
use crate::request::Context;
use crate::routes::sandbox::bindings::check_reason;
use crate::routes::sandbox::bindings::enablement::{not_runnable, require_enableable};
use crate::routes::sandbox::bindings::views::*;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::principal::Principal;
use domain::sharing::policy::parse_policies;
use domain::sharing::share::{Share, ShareCommand, ShareTargetKind, share_id};
use serde_json::json;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The share routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_shares, create_share))
        .routes(routes!(revoke_share))
}

const GRANT_COLUMNS: &str = "id, task_id, target_kind, target_id, generation, secret_slot_policies, \
     state, revoke_reason, granted_by, created_at, revoked_at";

async fn grant(state: &AppState, task: Uuid, id: Uuid) -> ApiResult<SandboxShareGrantResponse> {
    let row: Option<SandboxShareGrantResponse> = sqlx::query_as(&format!(
        "SELECT {GRANT_COLUMNS} FROM share_grants WHERE id = $1 AND task_id = $2"
    ))
    .bind(id)
    .bind(task)
    .fetch_optional(&state.pool)
    .await?;
    row.ok_or(ApiError::NotFound)
}

/// Whether the target is live in the caller's company.
async fn target_is_live(
    state: &AppState,
    principal: &Principal,
    kind: ShareTargetKind,
    id: Uuid,
) -> ApiResult<bool> {
    let company = principal.company_id;
    Ok(match kind {
        ShareTargetKind::Company => id == company,
        ShareTargetKind::Department => {
            crate::directory::department_in_company(&state.pool, company, id).await?
        }
        ShareTargetKind::Chatroom => sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM chatrooms WHERE id = $1 AND company_id = $2 AND NOT archived)",
        )
        .bind(id)
        .bind(company)
        .fetch_one(&state.pool)
        .await?,
    })
}

/// The task's grants, newest first (`lifecycle=all` by default).
#[utoipa::path(get, path = "/tasks/{task_id}/shares", tag = "tasks",
    params(("task_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxShareGrantListResponse), (status = 404, description = "not found")))]
async fn list_shares(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(task_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxShareGrantListResponse>> {
    let page = query.page::<(DateTime<Utc>, Uuid)>(20)?;
    owned_task(&state, &principal, task_id).await?;
    let lifecycle = query.lifecycle.unwrap_or(LifecycleFilter::All);
    let (after_time, after_id) = page
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    let rows: Vec<SandboxShareGrantResponse> = sqlx::query_as(&format!(
        "SELECT {GRANT_COLUMNS} FROM share_grants
          WHERE task_id = $1 AND ($2 OR (state = 'active') = $3)
            AND (created_at, id) < ($4, $5)
          ORDER BY created_at DESC, id DESC
          LIMIT $6"
    ))
    .bind(task_id)
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(after_time)
    .bind(after_id)
    .bind(page.size + 1)
    .fetch_all(&state.pool)
    .await?;
    let (items, next_page_token) = finish(rows, page.size, |r| (r.created_at, r.id));
    Ok(Json(SandboxShareGrantListResponse {
        items,
        next_page_token,
    }))
}

/// Shares the task with a live room, department or the company (owners only).
#[utoipa::path(post, path = "/tasks/{task_id}/shares", tag = "tasks",
    params(("task_id" = Uuid, Path)), request_body = SandboxShareCreateRequest,
    responses((status = 200, body = SandboxShareGrantResponse),
              (status = 404, description = "task or target not found"),
              (status = 409, description = "share_already_live, version_not_runnable, task_archived"),
              (status = 422, description = "secret_slot_policies_invalid or validation error")))]
async fn create_share(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(task_id): Path<Uuid>,
    ApiJson(body): ApiJson<SandboxShareCreateRequest>,
) -> ApiResult<Json<SandboxShareGrantResponse>> {
    let task = owned_task(&state, &principal, task_id).await?;
    let secret_slot_policies =
        parse_policies(body.secret_slot_policies.as_ref()).map_err(|problems| {
            ApiError::code(Code::SecretSlotPoliciesInvalid, "secret_slot_policies must map at most 100 valid slot names to borrower, owner or owner_overridable",
            )
            .with("errors", json!(problems))
        })?;
    require_enableable(&task)?;
    if !target_is_live(&state, &principal, body.target_kind, body.target_id).await? {
        return Err(ApiError::NotFound);
    }
    let runnable: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM task_versions
                         WHERE task_id = $1 AND state = 'published' AND content_state = 'active')",
    )
    .bind(task_id)
    .fetch_one(&state.pool)
    .await?;
    if !runnable {
        return Err(not_runnable());
    }
    let aggregate = share_id(task_id, body.target_kind, body.target_id);
    let command = ShareCommand::Grant {
        task_id,
        company_id: task.row.company_id,
        target_kind: body.target_kind,
        target_id: body.target_id,
        secret_slot_policies,
    };
    let committed = state
        .bus
        .execute::<Share>(&aggregate.to_string(), command, &ctx.metadata(&principal))
        .await?;
    let id = committed.state.live.ok_or(ApiError::NotFound)?;
    Ok(Json(grant(&state, task_id, id).await?))
}

/// Revokes a live grant; the bindings it carried stop applying.
#[utoipa::path(post, path = "/tasks/{task_id}/shares/{grant_id}/revoke", tag = "tasks",
    params(("task_id" = Uuid, Path), ("grant_id" = Uuid, Path)), request_body = SandboxRevokeRequest,
    responses((status = 200, body = SandboxShareGrantResponse), (status = 404, description = "not found"),
              (status = 409, description = "illegal_state_transition (already revoked)")))]
async fn revoke_share(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((task_id, grant_id)): Path<(Uuid, Uuid)>,
    OptionalJson(body): OptionalJson<SandboxRevokeRequest>,
) -> ApiResult<Json<SandboxShareGrantResponse>> {
    owned_task(&state, &principal, task_id).await?;
    let current = grant(&state, task_id, grant_id).await?;
    let reason = check_reason(&body.reason)?;
    let kind = serde_json::from_value(json!(current.target_kind)).map_err(ApiError::internal)?;
    let aggregate = share_id(task_id, kind, current.target_id);
    state
        .bus
        .execute::<Share>(
            &aggregate.to_string(),
            ShareCommand::Revoke { grant_id, reason },
            &ctx.metadata(&principal),
        )
        .await?;
    Ok(Json(grant(&state, task_id, grant_id).await?))
}
