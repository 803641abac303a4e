//! A run's artifacts and public links: the artifact list (by relative path),
//! download capabilities (5 minutes), and the permanent public links of the log,
//! the output and single artifact files (minting is idempotent; DELETE revokes; the
//! next mint after a revoke gives a new token).

use super::access::{RunRow, run_in_room};
use super::views::*;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::pagination::{LifecycleQuery, finish};
use crate::request::Context;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chrono::{DateTime, Utc};
use domain::principal::Principal;
use domain::runs::link::{LinkCommand, LinkedObject, PublicLink, link_aggregate_id};
use rand::RngCore;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The artifact and link routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_artifacts))
        .routes(routes!(download_artifact))
        .routes(routes!(mint_artifact_link, revoke_artifact_link))
        .routes(routes!(mint_log_link, revoke_log_link))
        .routes(routes!(mint_output_link, revoke_output_link))
}

const ARTIFACT_COLUMNS: &str =
    "id, run_id, relative_path, byte_size, digest, declared_content_type";

/// The run's artifact files by relative path.
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/runs/{run_id}/artifacts", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxRunArtifactListResponse), (status = 404, description = "not found")))]
async fn list_artifacts(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path((chatroom_id, run_id)): Path<(Uuid, Uuid)>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxRunArtifactListResponse>> {
    let page = query.page::<String>(20)?;
    let (_, run) = run_in_room(&state, &principal, chatroom_id, run_id).await?;
    // A run's artifacts are active until its contents expire, retired after.
    let lifecycle = query.lifecycle.unwrap_or_default();
    if !lifecycle.admits(run.content_state == "active") {
        return Ok(Json(SandboxRunArtifactListResponse {
            items: Vec::new(),
            next_page_token: None,
        }));
    }
    let rows: Vec<SandboxRunArtifact> = sqlx::query_as(&format!(
        "SELECT {ARTIFACT_COLUMNS} FROM run_artifacts
          WHERE run_id = $1 AND relative_path > $2
          ORDER BY relative_path LIMIT $3"
    ))
    .bind(run_id)
    .bind(page.after.unwrap_or_default())
    .bind(page.size + 1)
    .fetch_all(&state.pool)
    .await?;
    let (items, next_page_token) = finish(rows, page.size, |a| a.relative_path.clone());
    Ok(Json(SandboxRunArtifactListResponse {
        items,
        next_page_token,
    }))
}

async fn artifact(
    state: &AppState,
    principal: &Principal,
    chatroom_id: Uuid,
    run_id: Uuid,
    artifact_id: Uuid,
) -> ApiResult<(RunRow, SandboxRunArtifact)> {
    let (_, run) = run_in_room(state, principal, chatroom_id, run_id).await?;
    if run.content_state != "active" {
        return Err(ApiError::NotFound);
    }
    let row: Option<SandboxRunArtifact> = sqlx::query_as(&format!(
        "SELECT {ARTIFACT_COLUMNS} FROM run_artifacts WHERE id = $1 AND run_id = $2"
    ))
    .bind(artifact_id)
    .bind(run_id)
    .fetch_optional(&state.pool)
    .await?;
    Ok((run, row.ok_or(ApiError::NotFound)?))
}

/// `attachment; filename="<name>"` with the name reduced to safe characters.
pub fn attachment(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path);
    let safe: String = name
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || "._-".contains(c) {
                c
            } else {
                '_'
            }
        })
        .collect();
    format!("attachment; filename=\"{safe}\"")
}

/// A download capability for one artifact (5 minutes; there is no tenant
/// redemption route: public links hand files to others).
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/runs/{run_id}/artifacts/{artifact_id}/download", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path), ("artifact_id" = Uuid, Path)),
    responses((status = 200, body = SandboxArtifactDownloadCapabilityResponse), (status = 404, description = "not found")))]
async fn download_artifact(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path((chatroom_id, run_id, artifact_id)): Path<(Uuid, Uuid, Uuid)>,
) -> ApiResult<Json<SandboxArtifactDownloadCapabilityResponse>> {
    let (run, artifact) = artifact(&state, &principal, chatroom_id, run_id, artifact_id).await?;
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

#[derive(sqlx::FromRow)]
struct LinkRow {
    id: Uuid,
    revoked: bool,
    created_at: DateTime<Utc>,
}

/// The newest link of an object.
async fn newest_link(
    state: &AppState,
    run_id: Uuid,
    object: LinkedObject,
    artifact_id: Option<Uuid>,
) -> ApiResult<Option<LinkRow>> {
    Ok(sqlx::query_as(
        "SELECT id, revoked, created_at FROM public_links
          WHERE run_id = $1 AND object = $2 AND artifact_id IS NOT DISTINCT FROM $3
          ORDER BY generation DESC LIMIT 1",
    )
    .bind(run_id)
    .bind(object.as_str())
    .bind(artifact_id)
    .fetch_optional(&state.pool)
    .await?)
}

fn link_response(
    state: &AppState,
    run_id: Uuid,
    object: LinkedObject,
    artifact_id: Option<Uuid>,
    link: LinkRow,
) -> SandboxPublicLinkResponse {
    let token = state.links.token(link.id);
    SandboxPublicLinkResponse {
        run_id,
        object_kind: (object != LinkedObject::Artifact).then(|| object.as_str().into()),
        artifact_id,
        url: format!(
            "{}/public/sandbox/artifacts/{token}",
            state.deployment.base_url
        ),
        token,
        revoked: link.revoked,
        created_at: Some(link.created_at),
    }
}

/// Mints (idempotently) or revokes the link of one object of a run the caller reads.
async fn link(
    state: &AppState,
    ctx: &Context,
    principal: &Principal,
    run: &RunRow,
    object: LinkedObject,
    artifact_id: Option<Uuid>,
    revoke: bool,
) -> ApiResult<Json<SandboxPublicLinkResponse>> {
    let stored = run.content_state == "active"
        && match object {
            LinkedObject::Log => run.log_key.is_some(),
            LinkedObject::Output => run.output_key.is_some(),
            LinkedObject::Artifact => true,
        };
    if !stored {
        return Err(ApiError::NotFound);
    }
    let command = if revoke {
        LinkCommand::Revoke
    } else {
        LinkCommand::Mint {
            link_id: Uuid::new_v4(),
            run_id: run.id,
            company_id: run.company_id,
            object,
            artifact_id,
        }
    };
    state
        .bus
        .execute::<PublicLink>(
            &link_aggregate_id(run.id, object, artifact_id).to_string(),
            command,
            &ctx.metadata(principal),
        )
        .await?;
    let link = newest_link(state, run.id, object, artifact_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(link_response(
        state,
        run.id,
        object,
        artifact_id,
        link,
    )))
}

macro_rules! run_object_link_routes {
    ($mint:ident, $revoke:ident, $path:literal, $object:expr) => {
        /// Mints the permanent public link of the run's object (idempotent).
        #[utoipa::path(post, path = $path, tag = "runs",
            params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
            responses((status = 200, body = SandboxPublicLinkResponse), (status = 404, description = "not found")))]
        async fn $mint(
            State(state): State<AppState>,
            ctx: Context,
            Auth(principal): Auth,
            Path((chatroom_id, run_id)): Path<(Uuid, Uuid)>,
        ) -> ApiResult<Json<SandboxPublicLinkResponse>> {
            let (_, run) = run_in_room(&state, &principal, chatroom_id, run_id).await?;
            link(&state, &ctx, &principal, &run, $object, None, false).await
        }

        /// Revokes the public link of the run's object.
        #[utoipa::path(delete, path = $path, tag = "runs",
            params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
            responses((status = 200, body = SandboxPublicLinkResponse), (status = 404, description = "not found")))]
        async fn $revoke(
            State(state): State<AppState>,
            ctx: Context,
            Auth(principal): Auth,
            Path((chatroom_id, run_id)): Path<(Uuid, Uuid)>,
        ) -> ApiResult<Json<SandboxPublicLinkResponse>> {
            let (_, run) = run_in_room(&state, &principal, chatroom_id, run_id).await?;
            link(&state, &ctx, &principal, &run, $object, None, true).await
        }
    };
}

run_object_link_routes!(
    mint_log_link,
    revoke_log_link,
    "/chatrooms/{chatroom_id}/runs/{run_id}/log/public-link",
    LinkedObject::Log
);
run_object_link_routes!(
    mint_output_link,
    revoke_output_link,
    "/chatrooms/{chatroom_id}/runs/{run_id}/output/public-link",
    LinkedObject::Output
);

/// Mints (idempotently) the public link of one artifact file.
#[utoipa::path(post, path = "/chatrooms/{chatroom_id}/runs/{run_id}/artifacts/{artifact_id}/public-link", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path), ("artifact_id" = Uuid, Path)),
    responses((status = 200, body = SandboxPublicLinkResponse), (status = 404, description = "not found")))]
async fn mint_artifact_link(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((chatroom_id, run_id, artifact_id)): Path<(Uuid, Uuid, Uuid)>,
) -> ApiResult<Json<SandboxPublicLinkResponse>> {
    let (run, _) = artifact(&state, &principal, chatroom_id, run_id, artifact_id).await?;
    let object = LinkedObject::Artifact;
    link(
        &state,
        &ctx,
        &principal,
        &run,
        object,
        Some(artifact_id),
        false,
    )
    .await
}

/// Revokes the public link of one artifact file.
#[utoipa::path(delete, path = "/chatrooms/{chatroom_id}/runs/{run_id}/artifacts/{artifact_id}/public-link", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path), ("artifact_id" = Uuid, Path)),
    responses((status = 200, body = SandboxPublicLinkResponse), (status = 404, description = "not found")))]
async fn revoke_artifact_link(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path((chatroom_id, run_id, artifact_id)): Path<(Uuid, Uuid, Uuid)>,
) -> ApiResult<Json<SandboxPublicLinkResponse>> {
    let (run, _) = artifact(&state, &principal, chatroom_id, run_id, artifact_id).await?;
    let object = LinkedObject::Artifact;
    link(
        &state,
        &ctx,
        &principal,
        &run,
        object,
        Some(artifact_id),
        true,
    )
    .await
}
