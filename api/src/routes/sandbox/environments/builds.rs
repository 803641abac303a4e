//! Build attempts: create, list, get, cancel, and retry-build of a version.

use super::views::*;
use crate::access::Environment;
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::{ApiQuery, parse_json};
use crate::limits::company_limits;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::{HeaderValue, header};
use domain::catalog::{self, REGIONS};
use domain::environments::version::{BuildProfile, EnvironmentVersion, VersionCommand};
use domain::error::Code;
use domain::validation::ViolationKind;
use projections::read_models::environments::query;
use projections::read_models::switches;
use serde::Deserialize;
use utoipa::IntoParams;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The build routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_builds, create_build))
        .routes(routes!(get_build))
        .routes(routes!(cancel_build))
        .routes(routes!(retry_build))
}

async fn attempt(
    state: &AppState,
    version_id: Uuid,
    attempt_id: Uuid,
) -> ApiResult<SandboxBuildAttemptResponse> {
    query::attempt(&state.pool, version_id, attempt_id)
        .await?
        .map(Into::into)
        .ok_or(ApiError::NotFound)
}

/// Validates a build region: an enumeration value this deployment offers.
fn build_region(state: &AppState, requested: Option<&str>) -> ApiResult<String> {
    let Some(region) = requested else {
        return Ok(catalog::default_build_region(state.deployment.provider).to_string());
    };
    if catalog::region(region).is_none() {
        let codes = REGIONS.iter().map(|r| r.code.to_string()).collect();
        return Err(ApiError::invalid(
            &["body", "build_region"],
            ViolationKind::Enum(codes),
            Some(region.into()),
        ));
    }
    let offered = catalog::regions_for(state.deployment.provider)
        .iter()
        .any(|r| r.code == region)
        && state
            .deployment
            .selectable_regions
            .iter()
            .any(|r| r == region);
    if !offered {
        return Err(ApiError::code(
            Code::BuildRegionUnavailable,
            format!("{region} is not a region of this deployment"),
        ));
    }
    Ok(region.to_string())
}

/// Queues an attempt after the build admission fence (503
/// `build_admission_fenced`) and the company's queued-build limit.
async fn queue(caller: &Caller, version_id: Uuid, command: VersionCommand) -> ApiResult<()> {
    if let Some(wait) = switches::build_fence(caller.pool()).await? {
        return Err(ApiError::code(
            Code::BuildAdmissionFenced,
            "build admission is fenced while the platform rolls out a stage image; retry later",
        )
        .with("retry_after_seconds", wait)
        .with_header(header::RETRY_AFTER, HeaderValue::from(wait)));
    }
    let _lock = admission::lock(caller.pool(), caller.principal.company_id, "builds").await?;
    let limit = company_limits(caller.pool(), caller.principal.company_id)
        .await?
        .queued_build_limit;
    let queued = query::queued_builds(caller.pool(), caller.principal.company_id).await?;
    if queued >= limit {
        return Err(ApiError::code(
            Code::BuildQueueFull,
            format!("the company has {queued} queued builds (limit {limit})"),
        )
        .with("limit", limit));
    }
    caller
        .command::<EnvironmentVersion>(version_id, command)
        .await?;
    Ok(())
}

/// A version of an environment the caller manages (404 otherwise).
async fn managed_version(caller: &Caller, environment_id: Uuid, version_id: Uuid) -> ApiResult<()> {
    let environment = Environment::managed(caller, environment_id).await?;
    environment.version(caller, version_id).await?;
    Ok(())
}

/// Starts a build of a draft version.
#[utoipa::path(post, path = "/environments/{environment_id}/versions/{version_id}/builds", tag = "environments",
    params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    request_body = SandboxBuildAttemptCreateRequest,
    responses((status = 200, body = SandboxBuildAttemptResponse)))]
async fn create_build(
    caller: Caller,
    ApiPath((environment_id, version_id)): ApiPath<(Uuid, Uuid)>,
    body: axum::body::Bytes,
) -> ApiResult<Json<SandboxBuildAttemptResponse>> {
    let body: SandboxBuildAttemptCreateRequest = if body.iter().all(u8::is_ascii_whitespace) {
        Default::default()
    } else {
        parse_json(&body)?
    };
    managed_version(&caller, environment_id, version_id).await?;
    let region = build_region(&caller.state, body.build_region.as_deref())?;
    let attempt_id = Uuid::new_v4();
    let command = VersionCommand::QueueBuild {
        attempt_id,
        region,
        profile: body.build_profile.unwrap_or_default(),
        now: caller.ctx.time,
    };
    queue(&caller, version_id, command).await?;
    Ok(Json(attempt(&caller.state, version_id, attempt_id).await?))
}

/// A new attempt of a `retryable_failed` version within its 7-day window; region and
/// profile are not reused.
#[utoipa::path(post, path = "/environments/{environment_id}/versions/{version_id}/retry-build", tag = "environments",
    params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path)),
    responses((status = 200, body = SandboxBuildAttemptResponse)))]
async fn retry_build(
    caller: Caller,
    ApiPath((environment_id, version_id)): ApiPath<(Uuid, Uuid)>,
) -> ApiResult<Json<SandboxBuildAttemptResponse>> {
    managed_version(&caller, environment_id, version_id).await?;
    let attempt_id = Uuid::new_v4();
    let command = VersionCommand::RetryBuild {
        attempt_id,
        region: catalog::default_build_region(caller.state.deployment.provider).into(),
        profile: BuildProfile::Standard,
        now: caller.ctx.time,
    };
    queue(&caller, version_id, command).await?;
    Ok(Json(attempt(&caller.state, version_id, attempt_id).await?))
}

/// Query of the attempt list.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct BuildListQuery {
    /// Items per page, 1..100.
    pub page_size: Option<i64>,
    /// Opaque cursor.
    pub page_token: Option<String>,
    /// Repeatable status filter.
    #[serde(rename = "status[]", alias = "status", default)]
    pub status: Vec<String>,
}

/// Attempts of a version, newest first.
#[utoipa::path(get, path = "/environments/{environment_id}/versions/{version_id}/builds", tag = "environments",
    params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path), BuildListQuery),
    responses((status = 200, body = SandboxBuildAttemptListResponse)))]
async fn list_builds(
    caller: Caller,
    ApiPath((environment_id, version_id)): ApiPath<(Uuid, Uuid)>,
    ApiQuery(query): ApiQuery<BuildListQuery>,
) -> ApiResult<Json<SandboxBuildAttemptListResponse>> {
    let environment = Environment::read(&caller, environment_id).await?;
    environment.version(&caller, version_id).await?;
    let page = crate::pagination::PageQuery {
        page_size: query.page_size,
        page_token: query.page_token,
    }
    .page(50)?;
    let attempts = async |w| query::attempts(caller.pool(), version_id, &query.status, w).await;
    let listed = page.fetch(attempts, |r| r.attempt_number).await?;
    Ok(Json(listed.into()))
}

/// One attempt.
#[utoipa::path(get, path = "/environments/{environment_id}/versions/{version_id}/builds/{attempt_id}",
    tag = "environments", params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path), ("attempt_id" = Uuid, Path)),
    responses((status = 200, body = SandboxBuildAttemptResponse)))]
async fn get_build(
    caller: Caller,
    ApiPath((environment_id, version_id, attempt_id)): ApiPath<(Uuid, Uuid, Uuid)>,
) -> ApiResult<Json<SandboxBuildAttemptResponse>> {
    let environment = Environment::read(&caller, environment_id).await?;
    environment.version(&caller, version_id).await?;
    Ok(Json(attempt(&caller.state, version_id, attempt_id).await?))
}

/// Records a cancel intent; the worker moves the attempt through `cancelling` to
/// `cancelled`. Repeating it while in progress is harmless; on a finished attempt it
/// is 409 `not_cancellable`.
#[utoipa::path(post, path = "/environments/{environment_id}/versions/{version_id}/builds/{attempt_id}/cancel",
    tag = "environments", params(("environment_id" = Uuid, Path), ("version_id" = Uuid, Path), ("attempt_id" = Uuid, Path)),
    responses((status = 200, body = SandboxBuildAttemptResponse)))]
async fn cancel_build(
    caller: Caller,
    ApiPath((environment_id, version_id, attempt_id)): ApiPath<(Uuid, Uuid, Uuid)>,
) -> ApiResult<Json<SandboxBuildAttemptResponse>> {
    managed_version(&caller, environment_id, version_id).await?;
    attempt(&caller.state, version_id, attempt_id).await?;
    let command = VersionCommand::RequestCancel {
        attempt_id,
        now: caller.ctx.time,
    };
    caller
        .command::<EnvironmentVersion>(version_id, command)
        .await?;
    Ok(Json(attempt(&caller.state, version_id, attempt_id).await?))
}
