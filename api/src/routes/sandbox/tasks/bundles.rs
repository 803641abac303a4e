//! Task bundles by file: `POST /tasks/{id}/bundle-uploads` (multipart `file`: a zip,
//! tar or tar.gz of up to 64 MiB) answers a handle usable for 24 hours as a
//! draft's `bundle_id`. The archive is scanned before it is stored: a reserved
//! root name (`startup.sh`, `work.sh`, `driver.sh`, `input.json`, `inputs.json`,
//! `output`, `artifacts`), an absolute or drive path, `..`, NUL, a backslash or a
//! link answers 422 `bundle_path_forbidden` naming the entry. The body is guarded
//! by Content-Length before it is read.

use crate::access::Task;
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiPath, invalid_file, read_file_part};
use crate::middleware::body_limit;
use crate::request::Caller;
use crate::routes::sandbox::environments::check_upload_rate;
use crate::state::AppState;
use axum::Json;
use axum::extract::{DefaultBodyLimit, Multipart};
use axum::middleware::from_fn_with_state;
use bytes::Bytes;
use chrono::{DateTime, Utc};
use domain::environments::archive::{self, ArchiveFormat, ArchiveRejection};
use domain::error::Code;
use domain::objects::{ObjectCommand, ObjectKind, OwnedObject, StoredObject};
use domain::tasks::bundle::{self, BundleRef, MAX_BUNDLE_BYTES};
use domain::tasks::input;
use domain::validation::ViolationKind;
use projections::read_models::owned_objects::query as objects;
use serde::Serialize;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// How long a bundle-upload handle works.
pub const HANDLE_TTL_HOURS: i64 = 24;

/// Multipart framing allowed on top of the archive.
const FRAMING_BYTES: u64 = 64 << 10;

/// The bundle route, with its own body guard.
pub fn router() -> OpenApiRouter<AppState> {
    let limit = (MAX_BUNDLE_BYTES + FRAMING_BYTES) as usize;
    OpenApiRouter::new()
        .routes(routes!(upload_bundle))
        .layer(from_fn_with_state(limit, body_limit::guard))
        .layer(DefaultBodyLimit::max(limit))
}

/// `SandboxBundleUploadResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxBundleUploadResponse {
    /// The handle, usable as a draft's `bundle_id`.
    pub bundle_id: Uuid,
    /// Archive bytes.
    pub byte_size: i64,
    /// `sha256:` of the archive.
    pub digest: String,
    /// `zip`, `tar` or `tar.gz` (read from the bytes).
    pub archive_format: String,
    /// Files and directories in it.
    pub entries: i64,
    /// When the handle stops working (24 hours).
    pub expires_at: DateTime<Utc>,
}

/// The bundle a version pins, as its owner sees it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxTaskBundle {
    /// `sha256:` of the archive.
    pub digest: String,
    /// Archive bytes.
    pub byte_size: i64,
    /// `zip`, `tar` or `tar.gz`.
    pub archive_format: String,
    /// Files and directories in it.
    pub entries: i64,
}

impl From<BundleRef> for SandboxTaskBundle {
    fn from(bundle: BundleRef) -> Self {
        Self {
            digest: bundle.digest,
            byte_size: bundle.byte_size as i64,
            archive_format: bundle.archive_format.as_str().into(),
            entries: bundle.entries as i64,
        }
    }
}

/// Scans an archive under the bundle rules: its format and entry count, or the
/// refusal as an answer.
async fn scan(bytes: Bytes) -> ApiResult<(ArchiveFormat, u64)> {
    let scanned = tokio::task::spawn_blocking(move || {
        let mut cursor = std::io::Cursor::new(bytes);
        let format = archive::sniff(&mut cursor)?;
        let manifest = archive::scan(format, cursor, bundle::limits(), |_, reader| {
            std::io::copy(reader, &mut std::io::sink()).map(|_| ())
        });
        Ok::<_, std::io::Error>(manifest.map(|m| (format, m.entries)))
    })
    .await
    .map_err(|e| ApiError::Internal(e.into()))?
    .map_err(|e| ApiError::Internal(e.into()))?;
    scanned.map_err(|rejection: ArchiveRejection| {
        if bundle::is_path_rule(&rejection) {
            ApiError::code(Code::BundlePathForbidden, rejection.to_string())
        } else {
            invalid_file(rejection.to_string())
        }
    })
}

/// Stores a bundle and returns a handle for the task's drafts.
#[utoipa::path(post, path = "/tasks/{task_id}/bundle-uploads", tag = "tasks",
    params(("task_id" = Uuid, Path)),
    request_body(content_type = "multipart/form-data", description = "`file`: a zip, tar or tar.gz, up to 64 MiB"),
    responses((status = 200, body = SandboxBundleUploadResponse)))]
async fn upload_bundle(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    multipart: Multipart,
) -> ApiResult<Json<SandboxBundleUploadResponse>> {
    Task::owned(&caller, task_id).await?;
    let too_large = || ApiError::code(Code::RequestTooLarge, "the bundle is larger than 64 MiB");
    let bytes = Bytes::from(read_file_part(multipart, MAX_BUNDLE_BYTES, too_large).await?);
    let (format, entries) = scan(bytes.clone()).await?;
    let company = caller.principal.company_id;
    let object_id = Uuid::new_v4();
    let key = format!("bundles/{company}/{task_id}/{object_id}");
    let byte_size = bytes.len() as u64;
    let digest = input::digest(&bytes);
    {
        let _lock = admission::lock(caller.pool(), company, "uploads").await?;
        check_upload_rate(&caller.state, company, caller.ctx.time).await?;
        caller
            .state
            .objects
            .put_bytes(&key, bytes)
            .await
            .map_err(ApiError::Internal)?;
        let stored = StoredObject {
            object_id,
            company_id: Some(company),
            kind: ObjectKind::TaskBundle,
            digest: digest.clone(),
            byte_size,
            key,
        };
        let command = ObjectCommand::Record(stored);
        caller.command::<OwnedObject>(object_id, command).await?;
    }
    Ok(Json(SandboxBundleUploadResponse {
        bundle_id: object_id,
        byte_size: byte_size as i64,
        digest,
        archive_format: format.as_str().into(),
        entries: entries as i64,
        expires_at: caller.ctx.time + chrono::Duration::hours(HANDLE_TTL_HOURS),
    }))
}

/// The bundle behind an upload handle of this task, while the handle is valid.
pub async fn resolve(state: &AppState, task: &Task, handle: Uuid) -> ApiResult<BundleRef> {
    let company = task.row.task.company_id;
    let prefix = format!("bundles/{company}/{}/", task.id());
    let ttl = HANDLE_TTL_HOURS as i32;
    let kind = ObjectKind::TaskBundle.as_str();
    let Some(object) =
        objects::live_upload(&state.pool, kind, company, handle, &prefix, ttl).await?
    else {
        return Err(ApiError::invalid(
            &["body", "bundle_id"],
            ViolationKind::Rule {
                kind: "value_error",
                message: "unknown or expired bundle upload".into(),
            },
            Some(handle.to_string().into()),
        ));
    };
    let bytes = state
        .objects
        .get_bytes(&object.key)
        .await
        .map_err(ApiError::Internal)?;
    let (archive_format, entries) = scan(bytes).await?;
    Ok(BundleRef {
        object_id: object.id,
        digest: object.digest,
        byte_size: object.byte_size as u64,
        archive_format,
        entries,
    })
}
