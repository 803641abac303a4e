//! The permanent public links of a run's log, its output and single artifact
//! files: minting is idempotent, DELETE revokes, and the next mint after a revoke
//! gives a new token. Any reader of the run may mint and revoke them.

use super::artifacts::artifact;
use super::views::*;
use crate::access::Run;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::runs::link::{LinkCommand, LinkedObject, PublicLink, link_aggregate_id};
use projections::read_models::runs::query::{self as runs, LinkRow, RunRow};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The link routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(mint_artifact_link, revoke_artifact_link))
        .routes(routes!(mint_log_link, revoke_log_link))
        .routes(routes!(mint_output_link, revoke_output_link))
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
    caller: &Caller,
    run: &RunRow,
    object: LinkedObject,
    artifact_id: Option<Uuid>,
    revoke: bool,
) -> ApiResult<Json<SandboxPublicLinkResponse>> {
    let stored = run.content_active()
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
    caller
        .command::<PublicLink>(link_aggregate_id(run.id, object, artifact_id), command)
        .await?;
    let link = runs::newest_link(caller.pool(), run.id, object, artifact_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(link_response(
        &caller.state,
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
            caller: Caller,
            ApiPath((chatroom_id, run_id)): ApiPath<(Uuid, Uuid)>,
        ) -> ApiResult<Json<SandboxPublicLinkResponse>> {
            let run = Run::in_room(&caller, chatroom_id, run_id).await?.row;
            link(&caller, &run, $object, None, false).await
        }

        /// Revokes the public link of the run's object.
        #[utoipa::path(delete, path = $path, tag = "runs",
            params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path)),
            responses((status = 200, body = SandboxPublicLinkResponse), (status = 404, description = "not found")))]
        async fn $revoke(
            caller: Caller,
            ApiPath((chatroom_id, run_id)): ApiPath<(Uuid, Uuid)>,
        ) -> ApiResult<Json<SandboxPublicLinkResponse>> {
            let run = Run::in_room(&caller, chatroom_id, run_id).await?.row;
            link(&caller, &run, $object, None, true).await
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
    responses((status = 200, body = SandboxPublicLinkResponse)))]
async fn mint_artifact_link(
    caller: Caller,
    ApiPath((chatroom_id, run_id, artifact_id)): ApiPath<(Uuid, Uuid, Uuid)>,
) -> ApiResult<Json<SandboxPublicLinkResponse>> {
    let (run, _) = artifact(&caller, chatroom_id, run_id, artifact_id).await?;
    let object = LinkedObject::Artifact;
    link(&caller, &run, object, Some(artifact_id), false).await
}

/// Revokes the public link of one artifact file.
#[utoipa::path(delete, path = "/chatrooms/{chatroom_id}/runs/{run_id}/artifacts/{artifact_id}/public-link", tag = "runs",
    params(("chatroom_id" = Uuid, Path), ("run_id" = Uuid, Path), ("artifact_id" = Uuid, Path)),
    responses((status = 200, body = SandboxPublicLinkResponse)))]
async fn revoke_artifact_link(
    caller: Caller,
    ApiPath((chatroom_id, run_id, artifact_id)): ApiPath<(Uuid, Uuid, Uuid)>,
) -> ApiResult<Json<SandboxPublicLinkResponse>> {
    let (run, _) = artifact(&caller, chatroom_id, run_id, artifact_id).await?;
    let object = LinkedObject::Artifact;
    link(&caller, &run, object, Some(artifact_id), true).await
}
