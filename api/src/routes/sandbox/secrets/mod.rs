//! Secrets and approvals (spec section 4 "Secrets and approvals", and the secret
//! management queries): consumer-scope managers write, rotate and revoke encrypted
//! values and approve exact versions; values are never echoed.

pub mod approvals;
pub mod queries;
pub mod views;
pub mod writes;

use crate::error::ApiResult;
use crate::extract::ApiJson;
use crate::idempotency::IdempotencyKey;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::secrets::operation::OperationKind;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use views::*;

/// The secret routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(write_secret))
        .routes(routes!(rotate_secret))
        .routes(routes!(revoke_secret))
        .merge(queries::router())
        .merge(approvals::router())
}

/// Binds a value to a task's slot for a consumer scope (a second write rotates).
#[utoipa::path(post, path = "/secrets", tag = "secrets",
    params(("Idempotency-Key" = String, Header)),
    request_body = SandboxSecretWriteRequest,
    responses((status = 200, body = SandboxSecretOperationResponse)))]
async fn write_secret(
    caller: Caller,
    key: IdempotencyKey,
    ApiJson(body): ApiJson<SandboxSecretWriteRequest>,
) -> ApiResult<Json<SandboxSecretOperationResponse>> {
    writes::write(caller, key, body, OperationKind::Write).await
}

/// Rotates the value of a bound slot (404 when nothing is bound).
#[utoipa::path(post, path = "/secrets/rotate", tag = "secrets",
    params(("Idempotency-Key" = String, Header)),
    request_body = SandboxSecretWriteRequest,
    responses((status = 200, body = SandboxSecretOperationResponse)))]
async fn rotate_secret(
    caller: Caller,
    key: IdempotencyKey,
    ApiJson(body): ApiJson<SandboxSecretWriteRequest>,
) -> ApiResult<Json<SandboxSecretOperationResponse>> {
    writes::write(caller, key, body, OperationKind::Rotate).await
}

/// Revokes a bound slot; its values are shredded.
#[utoipa::path(post, path = "/secrets/revoke", tag = "secrets",
    params(("Idempotency-Key" = String, Header)),
    request_body = SandboxSecretRevokeRequest,
    responses((status = 200, body = SandboxSecretOperationResponse)))]
async fn revoke_secret(
    caller: Caller,
    key: IdempotencyKey,
    ApiJson(body): ApiJson<SandboxSecretRevokeRequest>,
) -> ApiResult<Json<SandboxSecretOperationResponse>> {
    writes::revoke(caller, key, body).await
}
