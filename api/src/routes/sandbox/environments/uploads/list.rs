//! The completed uploads of an environment, with the versions built from each.

use crate::access::Environment;
use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::pagination::{LifecycleQuery, finish};
use crate::request::Caller;
use crate::routes::sandbox::environments::views::SandboxContextObjectListResponse;
use axum::Json;
use axum::extract::Path;
use chrono::{DateTime, Utc};
use projections::read_models::context_uploads::query as uploads;
use uuid::Uuid;

/// Completed uploads of the environment, with the versions built from each.
#[utoipa::path(get, path = "/environments/{environment_id}/context-uploads", tag = "environments",
    params(("environment_id" = Uuid, Path), LifecycleQuery),
    responses((status = 200, body = SandboxContextObjectListResponse), (status = 404, description = "not found")))]
pub(super) async fn list_uploads(
    caller: Caller,
    Path(environment_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxContextObjectListResponse>> {
    Environment::managed(&caller, environment_id).await?;
    let page = query.page::<(DateTime<Utc>, Uuid)>(50)?;
    let size = page.size;
    let lifecycle = query.lifecycle.unwrap_or_default();
    let rows = uploads::completed(caller.pool(), environment_id, lifecycle, page.window()).await?;
    let (rows, next_page_token) = finish(rows, size, |r| (r.created_at, r.session_id));
    Ok(Json(SandboxContextObjectListResponse {
        items: rows.into_iter().map(Into::into).collect(),
        next_page_token,
    }))
}
