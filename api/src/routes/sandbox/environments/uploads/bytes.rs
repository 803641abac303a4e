//! The raw archive PUT of an upload session: the declared size is enforced from
//! `Content-Length` before any byte is read and again while the bytes stream into
//! the staging object.

use super::{CAPABILITY_HEADER, session, staging_key};
use crate::access::Environment;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::middleware::body_limit::declared_length;
use crate::objects::PutError;
use crate::request::Caller;
use crate::routes::sandbox::environments::views::SandboxContextUploadPutResponse;
use axum::Json;
use axum::body::Body;
use axum::http::{HeaderMap, header};
use domain::environments::upload::{ContextUpload, StagedBytes, UploadCommand};
use domain::error::Code;
use domain::validation::ViolationKind;
use sha2::{Digest, Sha256};
use uuid::Uuid;

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
    responses((status = 200, body = SandboxContextUploadPutResponse)))]
pub(super) async fn put_upload(
    caller: Caller,
    ApiPath((environment_id, session_id)): ApiPath<(Uuid, Uuid)>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Json<SandboxContextUploadPutResponse>> {
    let environment = Environment::managed(&caller, environment_id).await?;
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
    let upload = session(&caller.state, &environment, session_id).await?;
    let declared = upload.initiated.as_ref().map_or(0, |i| i.declared_bytes);
    let length = declared_length(&headers)?;
    if length.is_some_and(|l| l > declared as u64) {
        return Err(context_too_large(declared));
    }
    if length == Some(0) {
        return Err(ApiError::invalid(&["body"], ViolationKind::Missing, None));
    }
    let capability_sha256 = hex::encode(Sha256::digest(capability.as_bytes()));
    upload
        .admit_put(&capability_sha256, caller.ctx.time)
        .map_err(|e| crate::error::from_spec(&e))?;
    let key = staging_key(session_id);
    let written = match caller
        .state
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
        caller
            .state
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
        now: caller.ctx.time,
        staged,
    };
    caller.command::<ContextUpload>(session_id, command).await?;
    Ok(Json(SandboxContextUploadPutResponse {
        session_id,
        state: "uploading".into(),
        received_bytes: written.byte_size as i64,
        digest: written.digest,
    }))
}
