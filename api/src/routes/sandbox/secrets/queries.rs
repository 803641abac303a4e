//! Secret management queries: one masked binding, a consumer's bindings, and a
//! task's bindings and approvals limited to the consumer scopes the caller manages.
//! Lists cap at 2000 rows with a `truncated` flag.

use super::views::*;
use crate::access::{Consumer, Manageable, Task};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::ApiQuery;
use crate::openapi::enums::ConsumerScopeNames;
use crate::pagination::{MANAGEMENT_LIST_CAP, capped};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::secrets::ConsumerScope;
use domain::wire::from_wire;
use projections::read_models::secrets::query as secrets;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The query routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_secrets))
        .routes(routes!(secret))
        .routes(routes!(task_secrets))
        .routes(routes!(task_approvals))
}

/// `GET /secrets` parameters.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct SecretLookupQuery {
    /// `chatroom`, `department` or `company` (required).
    #[param(value_type = ConsumerScopeNames, inline)]
    pub consumer_scope: ConsumerScope,
    /// The consumer's id (required).
    pub consumer_id: Uuid,
}

/// The bindings of one consumer scope the caller manages, masked.
#[utoipa::path(get, path = "/secrets", tag = "secrets", params(SecretLookupQuery),
    responses((status = 200, body = SandboxSecretBindingListResponse)))]
async fn list_secrets(
    caller: Caller,
    ApiQuery(query): ApiQuery<SecretLookupQuery>,
) -> ApiResult<Json<SandboxSecretBindingListResponse>> {
    let consumer = Consumer::managed(&caller, query.consumer_scope, query.consumer_id).await?;
    let rows = secrets::consumer_bindings(
        caller.pool(),
        caller.principal.company_id,
        consumer.scope,
        consumer.id,
        MANAGEMENT_LIST_CAP + 1,
    )
    .await?;
    let (items, truncated) = capped(rows, |_| true);
    Ok(Json(SandboxSecretBindingListResponse { items, truncated }))
}

/// One binding, masked (managers of its consumer scope).
#[utoipa::path(get, path = "/secrets/{secret_id}", tag = "secrets",
    params(("secret_id" = Uuid, Path)),
    responses((status = 200, body = SandboxSecretBindingResponse)))]
async fn secret(
    caller: Caller,
    ApiPath(secret_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxSecretBindingResponse>> {
    let row = secrets::binding(caller.pool(), caller.principal.company_id, secret_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let scope = from_wire::<ConsumerScope>(&row.consumer_scope).ok_or(ApiError::NotFound)?;
    Consumer::managed(&caller, scope, row.consumer_id).await?;
    Ok(Json(row.into()))
}

/// A task's bindings in the consumer scopes the caller manages, masked.
#[utoipa::path(get, path = "/tasks/{task_id}/secrets", tag = "secrets",
    params(("task_id" = Uuid, Path)),
    responses((status = 200, body = SandboxSecretBindingListResponse)))]
async fn task_secrets(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxSecretBindingListResponse>> {
    let task = Task::read(&caller, task_id).await?;
    let manageable = Manageable::of(&caller).await?;
    let rows = secrets::task_bindings(
        caller.pool(),
        caller.principal.company_id,
        task.id(),
        MANAGEMENT_LIST_CAP + 1,
    )
    .await?;
    let (items, truncated) = capped(rows, |r: &secrets::SecretBindingRow| {
        manageable.includes(&r.consumer_scope, r.consumer_id)
    });
    Ok(Json(SandboxSecretBindingListResponse { items, truncated }))
}

/// A task's exact-version approvals in the consumer scopes the caller manages.
#[utoipa::path(get, path = "/tasks/{task_id}/secret-approvals", tag = "secrets",
    params(("task_id" = Uuid, Path)),
    responses((status = 200, body = SandboxSecretApprovalListResponse)))]
async fn task_approvals(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxSecretApprovalListResponse>> {
    let task = Task::read(&caller, task_id).await?;
    let manageable = Manageable::of(&caller).await?;
    let rows = secrets::task_approvals(
        caller.pool(),
        caller.principal.company_id,
        task.id(),
        MANAGEMENT_LIST_CAP + 1,
    )
    .await?;
    let (items, truncated) = capped(rows, |r: &secrets::ApprovalRow| {
        manageable.includes(&r.consumer_scope, r.consumer_id)
    });
    Ok(Json(SandboxSecretApprovalListResponse { items, truncated }))
}
