//! Exact-version approvals (`/secret-approvals` and its alias
//! `/shared-task-secret-approvals`): a consumer-scope manager accepts that one
//! published version may read the scope's values for the named slots. The version
//! must be published (409 `task_version_not_published`, checked first) with the
//! digest the manager saw (409 `task_version_digest_mismatch`).

use super::views::*;
use crate::access::{Consumer, Task};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::{ApiJson, OptionalJson};
use crate::request::Caller;
use crate::routes::sandbox::bindings::check_reason;
use crate::state::AppState;
use axum::Json;
use domain::error::Code;
use domain::secrets::ConsumerScope;
use domain::secrets::approval::{
    ApprovalSource, ApprovalTerms, SecretApproval, SecretApprovalCommand, approval_aggregate_id,
};
use domain::tasks::contents::valid_name;
use domain::tasks::version::TaskVersionState;
use domain::validation::ViolationKind;
use domain::wire::from_wire;
use projections::read_models::secrets::query as secrets;
use projections::read_models::tasks::query as tasks;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Most slots one approval names.
pub const MAX_APPROVAL_SLOTS: usize = 100;

/// The approval routes and their aliases.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_approval))
        .routes(routes!(revoke_approval))
        .routes(routes!(create_shared_task_approval))
        .routes(routes!(revoke_shared_task_approval))
}

fn rule(field: &str, message: &str) -> ApiError {
    ApiError::invalid(
        &["body", field],
        ViolationKind::Rule {
            kind: "value_error",
            message: message.into(),
        },
        None,
    )
}

/// Checks the request's own fields; returns the slot names sorted.
fn check(body: &SandboxSecretApprovalCreateRequest) -> ApiResult<Vec<String>> {
    let digest_ok = body
        .task_version_digest
        .strip_prefix("sha256:")
        .is_some_and(|hex| {
            hex.len() == 64 && hex.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'))
        });
    if !digest_ok {
        return Err(rule(
            "task_version_digest",
            "task_version_digest must be sha256: followed by 64 lowercase hex digits",
        ));
    }
    if body.slot_names.is_empty() || body.slot_names.len() > MAX_APPROVAL_SLOTS {
        return Err(rule("slot_names", "slot_names must list 1 to 100 slots"));
    }
    let mut slots = body.slot_names.clone();
    if let Some(bad) = slots.iter().find(|s| !valid_name(s)) {
        return Err(rule("slot_names", &format!("invalid slot name {bad:?}")));
    }
    slots.sort();
    slots.dedup();
    if slots.len() != body.slot_names.len() {
        return Err(rule("slot_names", "slot_names must not repeat a slot"));
    }
    if !body.risk_accepted {
        return Err(rule("risk_accepted", "risk_accepted must be true"));
    }
    Ok(slots)
}

async fn approve(
    caller: Caller,
    body: SandboxSecretApprovalCreateRequest,
) -> ApiResult<Json<SandboxSecretApprovalResponse>> {
    let slot_names = check(&body)?;
    let consumer = Consumer::managed(&caller, body.consumer_scope, body.consumer_id).await?;
    let task = Task::read(&caller, body.task_id).await?;
    let version = tasks::version(caller.pool(), task.id(), body.task_version_id)
        .await?
        .ok_or(ApiError::NotFound)?
        .version;
    if version.state != TaskVersionState::Published {
        return Err(ApiError::code(
            Code::TaskVersionNotPublished,
            "the version is not published",
        ));
    }
    if version.canonical_digest != body.task_version_digest {
        return Err(ApiError::code(
            Code::TaskVersionDigestMismatch,
            "task_version_digest differs from the published version's digest",
        ));
    }
    let terms = ApprovalTerms {
        company_id: caller.principal.company_id,
        consumer_scope: consumer.scope,
        consumer_id: consumer.id,
        task_id: task.id(),
        task_version_id: version.id,
        task_version_digest: version.canonical_digest,
        slot_names,
        source: ApprovalSource::Explicit,
    };
    let id = approval_aggregate_id(consumer.scope, consumer.id, version.id);
    let committed = caller
        .command::<SecretApproval>(id, SecretApprovalCommand::Grant(terms))
        .await?;
    let (approval_id, _) = committed.state.live.ok_or(ApiError::NotFound)?;
    answer(&caller, approval_id).await
}

async fn answer(caller: &Caller, id: Uuid) -> ApiResult<Json<SandboxSecretApprovalResponse>> {
    secrets::approval(caller.pool(), caller.principal.company_id, id)
        .await?
        .map(|row| Json(row.into()))
        .ok_or(ApiError::NotFound)
}

async fn revoke(
    caller: Caller,
    approval_id: Uuid,
    body: SandboxSecretApprovalRevokeRequest,
) -> ApiResult<Json<SandboxSecretApprovalResponse>> {
    let reason = check_reason(&body.reason)?;
    let row = secrets::approval(caller.pool(), caller.principal.company_id, approval_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let scope = from_wire::<ConsumerScope>(&row.consumer_scope).ok_or(ApiError::NotFound)?;
    Consumer::managed(&caller, scope, row.consumer_id).await?;
    let id = approval_aggregate_id(scope, row.consumer_id, row.task_version_id);
    caller
        .command::<SecretApproval>(
            id,
            SecretApprovalCommand::Revoke {
                approval_id,
                reason,
            },
        )
        .await?;
    answer(&caller, approval_id).await
}

/// Approves an exact published version to read the scope's values.
#[utoipa::path(post, path = "/secret-approvals", tag = "secrets",
    request_body = SandboxSecretApprovalCreateRequest,
    responses((status = 200, body = SandboxSecretApprovalResponse)))]
async fn create_approval(
    caller: Caller,
    ApiJson(body): ApiJson<SandboxSecretApprovalCreateRequest>,
) -> ApiResult<Json<SandboxSecretApprovalResponse>> {
    approve(caller, body).await
}

/// Revokes an approval.
#[utoipa::path(post, path = "/secret-approvals/{approval_id}/revoke", tag = "secrets",
    params(("approval_id" = Uuid, Path)),
    request_body(content = Option<SandboxSecretApprovalRevokeRequest>),
    responses((status = 200, body = SandboxSecretApprovalResponse)))]
async fn revoke_approval(
    caller: Caller,
    ApiPath(approval_id): ApiPath<Uuid>,
    OptionalJson(body): OptionalJson<SandboxSecretApprovalRevokeRequest>,
) -> ApiResult<Json<SandboxSecretApprovalResponse>> {
    revoke(caller, approval_id, body).await
}

/// Alias of `POST /secret-approvals`.
#[utoipa::path(post, path = "/shared-task-secret-approvals", tag = "secrets",
    request_body = SandboxSecretApprovalCreateRequest,
    responses((status = 200, body = SandboxSecretApprovalResponse)))]
async fn create_shared_task_approval(
    caller: Caller,
    ApiJson(body): ApiJson<SandboxSecretApprovalCreateRequest>,
) -> ApiResult<Json<SandboxSecretApprovalResponse>> {
    approve(caller, body).await
}

/// Alias of `POST /secret-approvals/{id}/revoke`.
#[utoipa::path(post, path = "/shared-task-secret-approvals/{approval_id}/revoke", tag = "secrets",
    params(("approval_id" = Uuid, Path)),
    request_body(content = Option<SandboxSecretApprovalRevokeRequest>),
    responses((status = 200, body = SandboxSecretApprovalResponse)))]
async fn revoke_shared_task_approval(
    caller: Caller,
    ApiPath(approval_id): ApiPath<Uuid>,
    OptionalJson(body): OptionalJson<SandboxSecretApprovalRevokeRequest>,
) -> ApiResult<Json<SandboxSecretApprovalResponse>> {
    revoke(caller, approval_id, body).await
}
