//! `complete` of an upload session: the staged archive is scanned as a stream
//! against the spec's context rules and, when it passes, kept as an owned object.

use super::session;
use crate::access::Environment;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::request::Caller;
use crate::routes::sandbox::environments::views::{
    SandboxContextUploadCompleteRequest, SandboxContextUploadCompleteResponse,
};
use crate::state::AppState;
use axum::Json;
use domain::environments::archive::{self, ArchiveLimits};
use domain::environments::upload::{ContextUpload, UploadCommand, UploadState};
use domain::error::Code;
use domain::objects::{ObjectCommand, ObjectKind, OwnedObject, StoredObject};
use domain::wire::wire;
use projections::read_models::owned_objects::query as objects;
use uuid::Uuid;

/// Validates the archive and keeps it as an owned object. A refused archive leaves
/// the session `completing`: fix nothing server-side, abort or retry.
#[utoipa::path(post, path = "/environments/{environment_id}/context-uploads/{session_id}/complete",
    tag = "environments", params(("environment_id" = Uuid, Path), ("session_id" = Uuid, Path)),
    request_body = SandboxContextUploadCompleteRequest,
    responses((status = 200, body = SandboxContextUploadCompleteResponse)))]
pub(super) async fn complete_upload(
    caller: Caller,
    ApiPath((environment_id, session_id)): ApiPath<(Uuid, Uuid)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<SandboxContextUploadCompleteResponse>> {
    if !body.iter().all(u8::is_ascii_whitespace) {
        crate::extract::parse_json::<SandboxContextUploadCompleteRequest>(&body)?;
    }
    let environment = Environment::managed(&caller, environment_id).await?;
    let upload = session(&caller.state, &environment, session_id).await?;
    if let (UploadState::Completed, Some(object_id)) = (upload.state, upload.owned_object_id) {
        return completed(&caller.state, session_id, object_id)
            .await
            .map(Json);
    }
    let initiated = upload.initiated.clone().ok_or(ApiError::NotFound)?;
    let command = UploadCommand::BeginCompletion {
        now: caller.ctx.time,
    };
    let upload = caller
        .command::<ContextUpload>(session_id, command)
        .await?
        .state;
    let staged = upload.staged.clone().ok_or(ApiError::NotFound)?;
    let spooled = caller
        .state
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
        caller.command::<ContextUpload>(session_id, command).await?;
        return Err(ApiError::code(Code::ContextInvalid, rejection.to_string())
            .with("error_detail", rejection.error_detail()));
    }
    let object_id = Uuid::new_v4();
    let key = format!("context/{}/{object_id}", caller.principal.company_id);
    caller
        .state
        .objects
        .copy(&staged.staging_key, &key)
        .await
        .map_err(ApiError::Internal)?;
    let stored = StoredObject {
        object_id,
        company_id: Some(caller.principal.company_id),
        kind: ObjectKind::Context,
        digest: staged.digest.clone(),
        byte_size: staged.byte_size as u64,
        key,
    };
    caller
        .command::<OwnedObject>(object_id, ObjectCommand::Record(stored))
        .await?;
    let command = UploadCommand::Complete {
        owned_object_id: object_id,
    };
    caller.command::<ContextUpload>(session_id, command).await?;
    caller
        .state
        .objects
        .delete(&staged.staging_key)
        .await
        .map_err(ApiError::Internal)?;
    completed(&caller.state, session_id, object_id)
        .await
        .map(Json)
}

async fn completed(
    state: &AppState,
    session_id: Uuid,
    object_id: Uuid,
) -> ApiResult<SandboxContextUploadCompleteResponse> {
    let object = objects::object(&state.pool, object_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(SandboxContextUploadCompleteResponse {
        session_id,
        state: wire(&UploadState::Completed),
        owned_object_id: object_id,
        digest: object.digest,
        byte_size: object.byte_size,
    })
}
