//! Context upload sessions: init, get and abort here; the PUT of the raw archive
//! (`bytes.rs`), complete (`complete.rs`) and the list of completed uploads
//! (`list.rs`) beside.

mod bytes;
mod complete;
mod list;

use super::views::*;
use crate::access::Environment;
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::extract::ApiPath;
use crate::request::Caller;
use crate::routes::sandbox::PREFIX;
use crate::state::AppState;
use axum::Json;
use chrono::{DateTime, Utc};
use domain::environments::environment::Lifecycle;
use domain::environments::upload::{
    CAPABILITY_TTL_SECONDS, ContextUpload, MAX_DECLARED_BYTES, SESSION_TTL_SECONDS, UploadCommand,
    UploadInitiated,
};
use domain::error::Code;
use domain::validation::ViolationKind;
use projections::read_models::context_uploads::query as uploads;
use projections::read_models::owned_objects::query as objects;
use sha2::{Digest, Sha256};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Live staging slots per company.
pub const STAGING_SLOTS: i64 = 20;
/// Bytes declared by live sessions per company.
pub const STAGING_BYTES: i64 = 20 << 30;
/// Upload inits per company per minute.
pub const INITS_PER_MINUTE: i64 = 5;
/// The capability header.
pub const CAPABILITY_HEADER: &str = "X-Sandbox-Upload-Capability";

/// The JSON routes of upload sessions.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list::list_uploads, init_upload))
        .routes(routes!(get_upload))
        .routes(routes!(complete::complete_upload))
        .routes(routes!(abort_upload))
}

/// The raw PUT.
pub fn bytes_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(bytes::put_upload))
}

fn staging_key(session: Uuid) -> String {
    format!("staging/{session}")
}

/// A session of this environment, from the log.
async fn session(
    state: &AppState,
    environment: &Environment,
    session_id: Uuid,
) -> ApiResult<ContextUpload> {
    let upload = state
        .bus
        .load::<ContextUpload>(&session_id.to_string())
        .await?;
    match &upload.initiated {
        Some(i) if i.environment_id == environment.row.id => Ok(upload),
        _ => Err(ApiError::NotFound),
    }
}

async fn session_row(
    state: &AppState,
    environment: Uuid,
    session_id: Uuid,
) -> ApiResult<SandboxContextUploadSessionResponse> {
    uploads::session(&state.pool, environment, session_id)
        .await?
        .map(Into::into)
        .ok_or(ApiError::NotFound)
}

fn require_active(environment: &Environment) -> ApiResult<()> {
    if environment.row.lifecycle == Lifecycle::Active {
        Ok(())
    } else {
        Err(ApiError::code(
            Code::EnvironmentArchived,
            "the environment is archived",
        ))
    }
}

/// Opens an upload session and returns its PUT capability.
#[utoipa::path(post, path = "/environments/{environment_id}/context-uploads", tag = "environments",
    params(("environment_id" = Uuid, Path)), request_body = SandboxContextUploadInitRequest,
    responses((status = 200, body = SandboxContextUploadInitResponse)))]
async fn init_upload(
    caller: Caller,
    ApiPath(environment_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SandboxContextUploadInitRequest>,
) -> ApiResult<Json<SandboxContextUploadInitResponse>> {
    let environment = Environment::managed(&caller, environment_id).await?;
    if body.declared_bytes < 1 {
        let kind = ViolationKind::GreaterThanEqual(1);
        return Err(ApiError::invalid(
            &["body", "declared_bytes"],
            kind,
            Some(body.declared_bytes.into()),
        ));
    }
    if body.declared_bytes > MAX_DECLARED_BYTES {
        let kind = ViolationKind::LessThanEqual(MAX_DECLARED_BYTES);
        return Err(ApiError::invalid(
            &["body", "declared_bytes"],
            kind,
            Some(body.declared_bytes.into()),
        ));
    }
    require_active(&environment)?;
    let session_id = Uuid::new_v4();
    let capability = crate::auth::api_key::generate_secret().replacen("sbx_", "cap_", 1);
    let now = caller.ctx.time;
    let initiated = UploadInitiated {
        session_id,
        environment_id,
        company_id: caller.principal.company_id,
        declared_bytes: body.declared_bytes,
        archive_format: body.archive_format,
        capability_sha256: hex::encode(Sha256::digest(capability.as_bytes())),
        capability_expires_at: now + chrono::Duration::seconds(CAPABILITY_TTL_SECONDS),
        expires_at: now + chrono::Duration::seconds(SESSION_TTL_SECONDS),
    };
    {
        let _lock = admission::lock(caller.pool(), caller.principal.company_id, "uploads").await?;
        let (live, declared) =
            uploads::live_staging(caller.pool(), caller.principal.company_id, now).await?;
        if live >= STAGING_SLOTS || declared + body.declared_bytes > STAGING_BYTES {
            return Err(ApiError::code(
                Code::StagingSlotExhausted,
                format!(
                    "{live} live uploads holding {declared} declared bytes; at most {STAGING_SLOTS} and 20 GiB"
                ),
            ));
        }
        check_upload_rate(&caller.state, caller.principal.company_id, now).await?;
        let command = UploadCommand::Initiate(initiated.clone());
        caller.command::<ContextUpload>(session_id, command).await?;
    }
    let session = session_row(&caller.state, environment_id, session_id).await?;
    Ok(Json(SandboxContextUploadInitResponse {
        session,
        capability,
        capability_header: CAPABILITY_HEADER,
        capability_expires_at: initiated.capability_expires_at,
        upload_url: format!(
            "{}{PREFIX}/environments/{environment_id}/context-uploads/{session_id}",
            caller.state.deployment.base_url
        ),
        upload_mode: "single_part",
    }))
}

/// Refuses (429 `upload_rate_limited`) when the company started
/// [`INITS_PER_MINUTE`] uploads in the minute before `now` (context and script
/// uploads both count). The caller holds the company's `uploads` admission lock.
pub async fn check_upload_rate(
    state: &AppState,
    company: Uuid,
    now: DateTime<Utc>,
) -> ApiResult<()> {
    let since = now - chrono::Duration::seconds(60);
    let recent = uploads::opened_since(&state.pool, company, since).await?
        + objects::file_uploads_since(&state.pool, company, since).await?;
    if recent >= INITS_PER_MINUTE {
        return Err(ApiError::code(
            Code::UploadRateLimited,
            format!("at most {INITS_PER_MINUTE} upload inits per company per minute"),
        ));
    }
    Ok(())
}

/// One session.
#[utoipa::path(get, path = "/environments/{environment_id}/context-uploads/{session_id}", tag = "environments",
    params(("environment_id" = Uuid, Path), ("session_id" = Uuid, Path)),
    responses((status = 200, body = SandboxContextUploadSessionResponse)))]
async fn get_upload(
    caller: Caller,
    ApiPath((environment_id, session_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxContextUploadSessionResponse>> {
    Environment::managed(&caller, environment_id).await?;
    Ok(Json(
        session_row(&caller.state, environment_id, session_id).await?,
    ))
}

/// Aborts the session and frees its staging slot.
#[utoipa::path(post, path = "/environments/{environment_id}/context-uploads/{session_id}/abort", tag = "environments",
    params(("environment_id" = Uuid, Path), ("session_id" = Uuid, Path)),
    responses((status = 200, body = SandboxContextUploadSessionResponse)))]
async fn abort_upload(
    caller: Caller,
    ApiPath((environment_id, session_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxContextUploadSessionResponse>> {
    let environment = Environment::managed(&caller, environment_id).await?;
    session(&caller.state, &environment, session_id).await?;
    caller
        .command::<ContextUpload>(session_id, UploadCommand::Abort)
        .await?;
    caller
        .state
        .objects
        .delete(&staging_key(session_id))
        .await
        .map_err(ApiError::Internal)?;
    Ok(Json(
        session_row(&caller.state, environment_id, session_id).await?,
    ))
}
