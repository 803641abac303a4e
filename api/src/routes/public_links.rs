//! `GET {base_url}/public/sandbox/artifacts/{token}`: the bytes behind a public
//! link (a run's log or output, or one artifact file served as a digest-verified
//! byte range of its bundle), as an attachment with `nosniff`. Any token that is
//! malformed, forged, revoked, or whose object is gone answers the uniform 404.

use crate::error::{ApiError, ApiResult};
use crate::routes::sandbox::runs::attachment;
use crate::state::AppState;
use axum::body::Body;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use domain::tasks::input::digest;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The public link route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(public_object))
}

#[derive(sqlx::FromRow)]
struct Linked {
    run_id: Uuid,
    object: String,
    artifact_id: Option<Uuid>,
    log_key: Option<String>,
    output_key: Option<String>,
    bundle_key: Option<String>,
}

#[derive(sqlx::FromRow)]
struct ArtifactSlice {
    relative_path: String,
    byte_offset: i64,
    byte_size: i64,
    digest: String,
    declared_content_type: String,
}

fn attachment_response(body: Body, content_type: &str, disposition: String) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    let value = |text: &str| {
        HeaderValue::from_str(text).unwrap_or(HeaderValue::from_static("application/octet-stream"))
    };
    headers.insert(header::CONTENT_TYPE, value(content_type));
    headers.insert(header::CONTENT_DISPOSITION, value(&disposition));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    response
}

/// The object behind a public link.
#[utoipa::path(get, path = "/public/sandbox/artifacts/{token}", tag = "general",
    params(("token" = String, Path)),
    responses((status = 200, description = "the bytes, as an attachment"), (status = 404, description = "not found")))]
async fn public_object(
    State(state): State<AppState>,
    Path(token): Path<String>,
) -> ApiResult<Response> {
    let id = state.links.verify(&token).ok_or(ApiError::NotFound)?;
    let linked: Option<Linked> = sqlx::query_as(
        "SELECT l.run_id, l.object, l.artifact_id, r.log_key, r.output_key, r.bundle_key
           FROM public_links l JOIN runs r ON r.id = l.run_id
          WHERE l.id = $1 AND NOT l.revoked AND r.content_state = 'active'",
    )
    .bind(id)
    .fetch_optional(&state.pool)
    .await?;
    let linked = linked.ok_or(ApiError::NotFound)?;
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
    let run = linked.run_id;
    match linked.object.as_str() {
        "log" => {
            let name = format!("run-{run}.log");
            whole(linked.log_key, "text/plain; charset=utf-8", name).await
        }
        "output" => {
            let name = format!("run-{run}-output");
            whole(linked.output_key, "application/octet-stream", name).await
        }
        _ => {
            let slice: Option<ArtifactSlice> = sqlx::query_as(
                "SELECT relative_path, byte_offset, byte_size, digest, declared_content_type
                   FROM run_artifacts WHERE id = $1 AND run_id = $2",
            )
            .bind(linked.artifact_id)
            .bind(run)
            .fetch_optional(&state.pool)
            .await?;
            let (slice, bundle) = slice.zip(linked.bundle_key).ok_or(ApiError::NotFound)?;
            let start = slice.byte_offset as u64;
            let bytes = if slice.byte_size == 0 {
                bytes::Bytes::new()
            } else {
                state
                    .objects
                    .get_range(&bundle, start..start + slice.byte_size as u64)
                    .await
                    .map_err(|_| ApiError::NotFound)?
            };
            if digest(&bytes) != slice.digest {
                tracing::error!(%run, path = slice.relative_path, "an artifact's bytes do not match its digest");
                return Err(ApiError::NotFound);
            }
            Ok(attachment_response(
                Body::from(bytes),
                &slice.declared_content_type,
                attachment(&slice.relative_path),
            ))
        }
    }
}
