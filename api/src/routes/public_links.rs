//! `GET {base_url}/public/sandbox/artifacts/{token}`: the bytes behind a public
//! link (a run's log or output, or one artifact file served as a digest-verified
//! byte range of its bundle), as an attachment with `nosniff`. Any token that is
//! malformed, forged, revoked, or whose object is gone answers the uniform 404.

use crate::download::{attachment, attachment_response};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::state::AppState;
use axum::body::Body;
use axum::extract::State;
use axum::response::Response;
use domain::runs::link::LinkedObject;
use domain::tasks::input::digest;
use projections::read_models::runs::query as runs;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The public link route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(public_object))
}

/// The object behind a public link.
#[utoipa::path(get, path = "/public/sandbox/artifacts/{token}", tag = "general",
    params(("token" = String, Path)),
    responses((status = 200, description = "the bytes, as an attachment")))]
async fn public_object(
    State(state): State<AppState>,
    ApiPath(token): ApiPath<String>,
) -> ApiResult<Response> {
    let id = state.links.verify(&token).ok_or(ApiError::NotFound)?;
    let (link, linked) = runs::live_link(&state.pool, id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let objects = state.objects.clone();
    let whole = |key: Option<String>, content_type: &'static str, name: String| async move {
        let key = key.ok_or(ApiError::NotFound)?;
        let stream = objects
            .get_stream(&key)
            .await
            .map_err(|_| ApiError::NotFound)?;
        Ok::<_, ApiError>(attachment_response(
            Body::from_stream(stream),
            content_type,
            attachment(&name),
        ))
    };
    let run = linked.id;
    match link.object {
        LinkedObject::Log => {
            let name = format!("run-{run}.log");
            whole(linked.log_key, "text/plain; charset=utf-8", name).await
        }
        LinkedObject::Output => {
            let name = format!("run-{run}-output");
            whole(linked.output_key, "application/octet-stream", name).await
        }
        LinkedObject::Artifact => {
            let slice = match link.artifact_id {
                Some(artifact) => runs::artifact(&state.pool, run, artifact).await?,
                None => None,
            };
            let (slice, bundle) = slice.zip(linked.bundle_key).ok_or(ApiError::NotFound)?;
            let (start, size) = (slice.byte_offset as u64, slice.byte_size as u64);
            let body = if size == 0 {
                if digest(&[]) != slice.digest {
                    tracing::error!(%run, path = slice.relative_path, "an artifact's bytes do not match its digest");
                    return Err(ApiError::NotFound);
                }
                Body::empty()
            } else {
                // Checked as it streams: a file of any size takes one chunk of
                // memory, and a mismatch cuts the response short.
                let range = Some(start..start + size);
                let stream = state
                    .objects
                    .get_verified(&bundle, range, &slice.digest, size)
                    .await
                    .map_err(|_| ApiError::NotFound)?;
                Body::from_stream(stream)
            };
            Ok(attachment_response(
                body,
                &slice.declared_content_type,
                attachment(&slice.relative_path),
            ))
        }
    }
}
