//! Context upload sessions: init, PUT of the raw archive, complete, abort, get and
//! the list of completed uploads.

use super::access::{self, EnvironmentAccess};
use super::views::*;
use crate::admission;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::objects::PutError;
use crate::pagination::{LifecycleQuery, finish};
use crate::request::Context;
use crate::routes::sandbox::PREFIX;
use crate::state::AppState;
use axum::Json;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use chrono::{DateTime, Utc};
use domain::environments::archive::{self, ArchiveLimits};
use domain::environments::upload::{
    CAPABILITY_TTL_SECONDS, ContextUpload, MAX_DECLARED_BYTES, SESSION_TTL_SECONDS, StagedBytes,
    UploadCommand, UploadInitiated, UploadState,
};
use domain::error::Code;
use domain::objects::{ObjectCommand, ObjectKind, OwnedObject, StoredObject};
use domain::validation::ViolationKind;
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
        .routes(routes!(list_uploads, init_upload))
        .routes(routes!(get_upload))
        .routes(routes!(complete_upload))
        .routes(routes!(abort_upload))
}

/// The raw PUT.
pub fn bytes_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(put_upload))
}

fn staging_key(session: Uuid) -> String {
    format!("staging/{session}")
}

/// A session of this environment, from the log.
async fn session(
    state: &AppState,
    environment: &EnvironmentAccess,
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
    sqlx::query_as(
        "SELECT id, environment_id, state, declared_bytes, archive_format, received_bytes, digest, owned_object_id,
                error_detail, created_at, expires_at
           FROM context_uploads WHERE id = $1 AND environment_id = $2",
    )
    .bind(session_id)
    .bind(environment)
    .fetch_optional(&state.pool)
    .await?
    .ok_or(ApiError::NotFound)
}

fn require_active(environment: &EnvironmentAccess) -> ApiResult<()> {
    if environment.row.lifecycle == "active" {
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
    responses((status = 200, body = SandboxContextUploadInitResponse), (status = 404, description = "not found"),
              (status = 429, description = "staging_slot_exhausted or upload_rate_limited")))]
async fn init_upload(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(environment_id): Path<Uuid>,
    ApiJson(body): ApiJson<SandboxContextUploadInitRequest>,
) -> ApiResult<Json<SandboxContextUploadInitResponse>> {
    let environment = access::managed_environment(&state, &principal, environment_id).await?;
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
    let now = ctx.time;
    let initiated = UploadInitiated {
        session_id,
        environment_id,
        company_id: principal.company_id,
        declared_bytes: body.declared_bytes,
        archive_format: body.archive_format,
        capability_sha256: hex::encode(Sha256::digest(capability.as_bytes())),
        capability_expires_at: now + chrono::Duration::seconds(CAPABILITY_TTL_SECONDS),
        expires_at: now + chrono::Duration::seconds(SESSION_TTL_SECONDS),
    };
    {
        let _lock = admission::lock(&state.pool, principal.company_id, "uploads").await?;
        let (live, declared): (i64, i64) = sqlx::query_as(
            "SELECT count(*), coalesce(sum(declared_bytes), 0)::bigint FROM context_uploads
              WHERE company_id = $1 AND state IN ('uploading', 'completing') AND expires_at > $2",
        )
        .bind(principal.company_id)
        .bind(now)
        .fetch_one(&state.pool)
        .await?;
        if live >= STAGING_SLOTS || declared + body.declared_bytes > STAGING_BYTES {
            return Err(ApiError::code(
                Code::StagingSlotExhausted,
                format!(
                    "{live} live uploads holding {declared} declared bytes; at most {STAGING_SLOTS} and 20 GiB"
                ),
            ));
        }
        check_upload_rate(&state, principal.company_id, now).await?;
        let command = UploadCommand::Initiate(initiated.clone());
        state
            .bus
            .execute::<ContextUpload>(&session_id.to_string(), command, &ctx.metadata(&principal))
            .await?;
    }
    let session = session_row(&state, environment_id, session_id).await?;
    Ok(Json(SandboxContextUploadInitResponse {
        session,
        capability,
        capability_header: CAPABILITY_HEADER,
        capability_expires_at: initiated.capability_expires_at,
        upload_url: format!(
            "{}{PREFIX}/environments/{environment_id}/context-uploads/{session_id}",
            state.deployment.base_url
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
    let recent: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM context_uploads
                  WHERE company_id = $1 AND created_at > $2 - interval '60 seconds')
              + (SELECT count(*) FROM owned_objects
                  WHERE company_id = $1 AND kind = 'script' AND created_at > $2 - interval '60 seconds')",
    )
    .bind(company)
    .bind(now)
    .fetch_one(&state.pool)
    .await?;
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
    responses((status = 200, body = SandboxContextUploadSessionResponse), (status = 404, description = "not found")))]
async fn get_upload(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path((environment_id, session_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxContextUploadSessionResponse>> {
    access::managed_environment(&state, &principal, environment_id).await?;
    Ok(Json(session_row(&state, environment_id, session_id).await?))
}

fn content_length(headers: &HeaderMap) -> ApiResult<Option<u64>> {
    let Some(value) = headers.get(header::CONTENT_LENGTH) else {
        return Ok(None);
    };
    let malformed = || {
        ApiError::code(
            Code::InvalidContentLength,
            "the Content-Length header is malformed",
        )
    };
    let text = value.to_str().map_err(|_| malformed())?;
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(malformed());
    }
    text.parse().map(Some).map_err(|_| malformed())
}

fn context_too_large(declared: i64) -> ApiError {
    ApiError::code(
        Code::ContextTooLarge,
        format!("the archive is larger than the declared {declared} bytes"),
    )
}

/// The raw archive bytes (`Content-Type: application/octet-stream`).
#[utoipa::path(put, path = "/environments/{environment_id}/context-uploads/{session_id}", tag = "environments",
    params(("environment_id" = Uuid, Path), ("session_id" = Uuid, Path),
           ("X-Sandbox-Upload-Capability" = String, Header, description = "the capability from init")),
    request_body(content = Vec<u8>, content_type = "application/octet-stream"),
    responses((status = 200, body = SandboxContextUploadPutResponse),
              (status = 409, description = "capability_fenced"),
              (status = 413, description = "context_too_large"),
              (status = 422, description = "missing capability header or empty body")))]
async fn put_upload(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((environment_id, session_id)): Path<(Uuid, Uuid)>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Json<SandboxContextUploadPutResponse>> {
    let environment = access::managed_environment(&state, &principal, environment_id).await?;
    let capability = headers
        .get(CAPABILITY_HEADER)
        .and_then(|v| v.to_str().ok())
        .ok_or_else(|| {
            ApiError::invalid(
                &["header", "x-sandbox-upload-capability"],
                ViolationKind::Missing,
                None,
            )
        })?;
    let content_type = headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    if !content_type.starts_with("application/octet-stream") {
        let kind = ViolationKind::Rule {
            kind: "value_error",
            message: "send the archive with Content-Type: application/octet-stream".into(),
        };
        return Err(ApiError::invalid(
            &["header", "content-type"],
            kind,
            Some(content_type.into()),
        ));
    }
    let upload = session(&state, &environment, session_id).await?;
    let declared = upload.initiated.as_ref().map_or(0, |i| i.declared_bytes);
    let length = content_length(&headers)?;
    if length.is_some_and(|l| l > declared as u64) {
        return Err(context_too_large(declared));
    }
    if length == Some(0) {
        return Err(ApiError::invalid(&["body"], ViolationKind::Missing, None));
    }
    let capability_sha256 = hex::encode(Sha256::digest(capability.as_bytes()));
    upload
        .admit_put(&capability_sha256, ctx.time)
        .map_err(|e| crate::error::from_spec(&e))?;
    let key = staging_key(session_id);
    let written = match state
        .objects
        .put_stream(&key, body.into_data_stream(), declared as u64)
        .await
    {
        Ok(written) => written,
        Err(PutError::TooLarge { .. }) => return Err(context_too_large(declared)),
        Err(PutError::Body(reason)) => {
            return Err(ApiError::code(Code::InvalidBody, reason));
        }
        Err(PutError::Store(e)) => {
            tracing::error!(error = format!("{e:#}"), "staging failed");
            return Err(ApiError::code(
                Code::StorageUnavailable,
                "object storage is unavailable",
            ));
        }
    };
    if written.byte_size == 0 {
        state
            .objects
            .delete(&key)
            .await
            .map_err(ApiError::Internal)?;
        return Err(ApiError::invalid(&["body"], ViolationKind::Missing, None));
    }
    let staged = StagedBytes {
        byte_size: written.byte_size as i64,
        digest: written.digest.clone(),
        staging_key: key,
    };
    let command = UploadCommand::ReceiveBytes {
        capability_sha256,
        now: ctx.time,
        staged,
    };
    state
        .bus
        .execute::<ContextUpload>(&session_id.to_string(), command, &ctx.metadata(&principal))
        .await?;
    Ok(Json(SandboxContextUploadPutResponse {
        session_id,
        state: "uploading".into(),
        received_bytes: written.byte_size as i64,
        digest: written.digest,
    }))
}

/// Validates the archive and keeps it as an owned object. A refused archive leaves
/// the session `completing`: fix nothing server-side, abort or retry.
#[utoipa::path(post, path = "/environments/{environment_id}/context-uploads/{session_id}/complete",
    tag = "environments", params(("environment_id" = Uuid, Path), ("session_id" = Uuid, Path)),
    request_body = SandboxContextUploadCompleteRequest,
    responses((status = 200, body = SandboxContextUploadCompleteResponse),
              (status = 409, description = "the session is not open"),
              (status = 422, description = "context_invalid, with error_detail naming the rule")))]
async fn complete_upload(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((environment_id, session_id)): Path<(Uuid, Uuid)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<SandboxContextUploadCompleteResponse>> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        crate::extract::parse_json::<SandboxContextUploadCompleteRequest>(&body)?;
    }
    let environment = access::managed_environment(&state, &principal, environment_id).await?;
    let upload = session(&state, &environment, session_id).await?;
    let meta = ctx.metadata(&principal);
    if let (UploadState::Completed, Some(object_id)) = (upload.state, upload.owned_object_id) {
        return completed(&state, session_id, object_id).await.map(Json);
    }
    let initiated = upload.initiated.clone().ok_or(ApiError::NotFound)?;
    let command = UploadCommand::BeginCompletion { now: ctx.time };
    let upload = state
        .bus
        .execute::<ContextUpload>(&session_id.to_string(), command, &meta)
        .await?
        .state;
    let staged = upload.staged.clone().ok_or(ApiError::NotFound)?;
    let spooled = state
        .objects
        .spool(&staged.staging_key)
        .await
        .map_err(|e| {
            tracing::error!(error = format!("{e:#}"), "cannot read staged bytes");
            ApiError::code(Code::StorageUnavailable, "object storage is unavailable")
        })?;
    let format = initiated.archive_format;
    let verdict = tokio::task::spawn_blocking(move || {
        let file = std::fs::File::open(spooled.path())?;
        Ok::<_, std::io::Error>(archive::scan(
            format,
            std::io::BufReader::new(file),
            ArchiveLimits::default(),
            |_, _| Ok(()),
        ))
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(ApiError::internal)?;
    if let Err(rejection) = verdict {
        let command = UploadCommand::FailCompletion {
            error_detail: rejection.error_detail().into(),
            message: rejection.to_string(),
        };
        state
            .bus
            .execute::<ContextUpload>(&session_id.to_string(), command, &meta)
            .await?;
        return Err(ApiError::code(Code::ContextInvalid, rejection.to_string())
            .with("error_detail", rejection.error_detail()));
    }
    let object_id = Uuid::new_v4();
    let key = format!("context/{}/{object_id}", principal.company_id);
    state
        .objects
        .copy(&staged.staging_key, &key)
        .await
        .map_err(ApiError::Internal)?;
    let stored = StoredObject {
        object_id,
        company_id: Some(principal.company_id),
        kind: ObjectKind::Context,
        digest: staged.digest.clone(),
        byte_size: staged.byte_size as u64,
        key,
    };
    state
        .bus
        .execute::<OwnedObject>(&object_id.to_string(), ObjectCommand::Record(stored), &meta)
        .await?;
    let command = UploadCommand::Complete {
        owned_object_id: object_id,
    };
    state
        .bus
        .execute::<ContextUpload>(&session_id.to_string(), command, &meta)
        .await?;
    state
        .objects
        .delete(&staged.staging_key)
        .await
        .map_err(ApiError::Internal)?;
    completed(&state, session_id, object_id).await.map(Json)
}

async fn completed(
    state: &AppState,
    session_id: Uuid,
    object_id: Uuid,
) -> ApiResult<SandboxContextUploadCompleteResponse> {
    let (digest, byte_size): (String, i64) =
        sqlx::query_as("SELECT digest, byte_size FROM owned_objects WHERE id = $1")
            .bind(object_id)
            .fetch_optional(&state.pool)
            .await?
            .ok_or(ApiError::NotFound)?;
    Ok(SandboxContextUploadCompleteResponse {
        session_id,
        state: "completed".into(),
        owned_object_id: object_id,
        digest,
        byte_size,
    })
}

/// Aborts the session and frees its staging slot.
#[utoipa::path(post, path = "/environments/{environment_id}/context-uploads/{session_id}/abort", tag = "environments",
    params(("environment_id" = Uuid, Path), ("session_id" = Uuid, Path)),
    responses((status = 200, body = SandboxContextUploadSessionResponse), (status = 404, description = "not found"),
              (status = 409, description = "the session is completed")))]
async fn abort_upload(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((environment_id, session_id)): Path<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxContextUploadSessionResponse>> {
    let environment = access::managed_environment(&state, &principal, environment_id).await?;
    session(&state, &environment, session_id).await?;
    let meta = ctx.metadata(&principal);
    state
        .bus
        .execute::<ContextUpload>(&session_id.to_string(), UploadCommand::Abort, &meta)
        .await?;
    state
        .objects
        .delete(&staging_key(session_id))
        .await
        .map_err(ApiError::Internal)?;
    Ok(Json(session_row(&state, environment_id, session_id).await?))
}

#[derive(sqlx::FromRow)]
struct ObjectRow {
    session_id: Uuid,
    owned_object_id: Uuid,
    digest: String,
    byte_size: i64,
    archive_format: String,
    deletion_state: String,
    created_at: DateTime<Utc>,
    used_by: Vec<Uuid>,
}

/// Completed uploads of the environment, with the versions built from each.
#[utoipa::path(get, path = "/environments/{environment_id}/context-uploads", tag = "environments",
    params(("environment_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxContextObjectListResponse), (status = 404, description = "not found")))]
async fn list_uploads(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(environment_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxContextObjectListResponse>> {
    access::managed_environment(&state, &principal, environment_id).await?;
    let page = query.page::<(DateTime<Utc>, Uuid)>(50)?;
    let lifecycle = super::catalog::lifecycle_name(query.lifecycle.unwrap_or_default());
    let (after_time, after_id) = page
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    let rows: Vec<ObjectRow> = sqlx::query_as(
        "SELECT u.id AS session_id, o.id AS owned_object_id, o.digest, o.byte_size, u.archive_format,
                o.deletion_state, u.updated_at AS created_at,
                coalesce(array_agg(v.id ORDER BY v.version_number) FILTER (WHERE v.id IS NOT NULL), '{}') AS used_by
           FROM context_uploads u
           JOIN owned_objects o ON o.id = u.owned_object_id
           LEFT JOIN environment_versions v ON v.owned_object_id = o.id
          WHERE u.environment_id = $1 AND u.state = 'completed'
            AND ($2 = 'all' OR ($2 = 'active') = (o.deletion_state = 'active'))
            AND (u.updated_at, u.id) < ($3, $4)
          GROUP BY u.id, o.id
          ORDER BY u.updated_at DESC, u.id DESC
          LIMIT $5",
    )
    .bind(environment_id)
    .bind(lifecycle)
    .bind(after_time)
    .bind(after_id)
    .bind(page.size + 1)
    .fetch_all(&state.pool)
    .await?;
    let (rows, next_page_token) = finish(rows, page.size, |r| (r.created_at, r.session_id));
    let items = rows
        .into_iter()
        .map(|r| SandboxContextObject {
            owned_object_id: r.owned_object_id,
            session_id: r.session_id,
            digest: r.digest,
            byte_size: r.byte_size,
            archive_format: r.archive_format,
            deletion_state: r.deletion_state,
            created_at: r.created_at,
            used_by_version_ids: r.used_by,
        })
        .collect();
    Ok(Json(SandboxContextObjectListResponse {
        items,
        next_page_token,
    }))
}
