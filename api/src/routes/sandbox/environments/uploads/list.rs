//! The completed uploads of an environment, with the versions built from each.

use crate::access::Environment;
use crate::error::ApiResult;
use crate::extract::ApiPath;
use crate::extract::ApiQuery;
use crate::pagination::LifecycleQuery;
use crate::request::Caller;
use crate::routes::sandbox::environments::views::SandboxContextObjectListResponse;
use axum::Json;
use projections::read_models::context_uploads::query as uploads;
use uuid::Uuid;

/// Completed uploads of the environment, with the versions built from each.
#[utoipa::path(get, path = "/environments/{environment_id}/context-uploads", tag = "environments",
    params(("environment_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxContextObjectListResponse)))]
pub(super) async fn list_uploads(
    caller: Caller,
    ApiPath(environment_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxContextObjectListResponse>> {
    Environment::managed(&caller, environment_id).await?;
    let page = query.page(50)?;
    let lifecycle = query.lifecycle.unwrap_or_default();
    let completed = async |w| uploads::completed(caller.pool(), environment_id, lifecycle, w).await;
    let listed = page
        .fetch(completed, |r| (r.created_at, r.session_id))
        .await?;
    Ok(Json(listed.into()))
}
