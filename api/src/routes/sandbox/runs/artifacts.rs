//! A run's artifacts: the artifact list (by relative path) and download
//! capabilities (5 minutes). Their public links are in `links.rs`.

use super::views::*;
use crate::access::Run;
use crate::download::attachment;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::ApiQuery;
use crate::pagination::LifecycleQuery;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::Utc;
use projections::read_models::runs::query::{self as runs, ArtifactRow, RunRow};
use rand::RngCore;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The artifact and link routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_artifacts))
        .routes(routes!(download_artifact))
}

/// The run's artifact files by relative path.
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/runs/{run_id}/artifacts", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxRunArtifactListResponse)))]
async fn list_artifacts(
    caller: Caller,
    ApiPath((chatroom_id, run_id)): ApiPath<(Uuid, Uuid)>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxRunArtifactListResponse>> {
    let page = query.page(20)?;
    let run = Run::in_room(&caller, chatroom_id, run_id).await?.row;
    // A run's artifacts are active until its contents expire, retired after.
    let held = query
        .lifecycle
        .unwrap_or_default()
        .admits(run.content_active());
    let artifacts = async |w| match held {
        true => runs::artifacts(caller.pool(), run_id, w).await,
        false => Ok(Vec::new()),
    };
    let listed = page.fetch(artifacts, |a| a.relative_path.clone()).await?;
    Ok(Json(listed.into()))
}

/// An artifact of a run the caller reads, while the run's contents are held.
pub(super) async fn artifact(
    caller: &Caller,
    chatroom_id: Uuid,
    run_id: Uuid,
    artifact_id: Uuid,
) -> ApiResult<(RunRow, ArtifactRow)> {
    let run = Run::in_room(caller, chatroom_id, run_id).await?.row;
    if !run.content_active() {
        return Err(ApiError::NotFound);
    }
    let row = runs::artifact(caller.pool(), run_id, artifact_id).await?;
    Ok((run, row.ok_or(ApiError::NotFound)?))
}

/// A download capability for one artifact (5 minutes; there is no tenant
/// redemption route: public links hand files to others).
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/runs/{run_id}/artifacts/{artifact_id}/download", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path), ("artifact_id" = Uuid, Path)),
    responses((status = 200, body = SandboxArtifactDownloadCapabilityResponse)))]
async fn download_artifact(
    caller: Caller,
    ApiPath((chatroom_id, run_id, artifact_id)): ApiPath<(Uuid, Uuid, Uuid)>,
) -> ApiResult<Json<SandboxArtifactDownloadCapabilityResponse>> {
    let (run, artifact) = artifact(&caller, chatroom_id, run_id, artifact_id).await?;
    let mut token = [0u8; 32];
    rand::thread_rng().fill_bytes(&mut token);
    Ok(Json(SandboxArtifactDownloadCapabilityResponse {
        artifact_id,
        run_id,
        company_id: run.company_id,
        capability_token: URL_SAFE_NO_PAD.encode(token),
        expires_at: Utc::now() + chrono::Duration::minutes(5),
        content_type: artifact.declared_content_type,
        content_disposition: attachment(&artifact.relative_path),
        x_content_type_options: "nosniff",
    }))
}
