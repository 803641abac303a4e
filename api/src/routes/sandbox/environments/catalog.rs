//! The environment resources themselves: `GET/POST /environments`,
//! `GET/PATCH /environments/{id}`, `POST /environments/{id}/archive`.

use super::views::*;
use crate::access::Environment;
use crate::access::scope::resolve_owner;
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::{ApiJson, ApiQuery};
use crate::limits::company_limits;
use crate::pagination::LifecycleQuery;
use crate::request::Caller;
use crate::routes::sandbox::owners::{check_text, no_fields};
use crate::state::AppState;
use axum::Json;
use domain::environments::environment::{
    Environment as EnvironmentAggregate, EnvironmentCommand, EnvironmentCreated, OwnerKind,
    OwnerScope,
};
use domain::error::Code;
use projections::read_models::environments::query;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The environment routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_environments, create_environment))
        .routes(routes!(get_environment, update_environment))
        .routes(routes!(archive_environment))
}

/// Environments of the caller's company, curated ones included, newest first.
#[utoipa::path(get, path = "/environments", tag = "environments", params(LifecycleQuery),
    responses((status = 200, body = SandboxEnvironmentListResponse)))]
async fn list_environments(
    caller: Caller,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxEnvironmentListResponse>> {
    let page = query.page(50)?;
    let (company, lifecycle) = (
        caller.principal.company_id,
        query.lifecycle.unwrap_or_default(),
    );
    let environments = async |w| query::environments(caller.pool(), company, lifecycle, w).await;
    let listed = page.fetch(environments, |r| (r.created_at, r.id)).await?;
    Ok(Json(listed.into()))
}

/// Creates a company- or department-owned environment.
#[utoipa::path(post, path = "/environments", tag = "environments", request_body = SandboxEnvironmentCreateRequest,
    responses((status = 200, body = SandboxEnvironmentResponse)))]
async fn create_environment(
    caller: Caller,
    ApiJson(body): ApiJson<SandboxEnvironmentCreateRequest>,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    check_text(Some(&body.name), Some(&body.description))?;
    let scope = body.owner_scope.unwrap_or(OwnerScope::Company);
    let owner_id = resolve_owner(&caller, scope, body.owner_id).await?;
    let id = Uuid::new_v4();
    {
        let _lock =
            admission::lock(caller.pool(), caller.principal.company_id, "environments").await?;
        let limit = company_limits(caller.pool(), caller.principal.company_id)
            .await?
            .active_environment_limit;
        let active = query::active_environments(caller.pool(), caller.principal.company_id).await?;
        if active >= limit {
            return Err(ApiError::code(
                Code::ActiveEnvironmentLimit,
                format!("the company already has {active} active environments (limit {limit})"),
            )
            .with("limit", limit));
        }
        let created = EnvironmentCreated {
            environment_id: id,
            company_id: Some(caller.principal.company_id),
            owner_kind: OwnerKind::Company,
            owner_scope: scope,
            owner_id: Some(owner_id),
            name: body.name,
            description: body.description,
        };
        let command = EnvironmentCommand::Create(created);
        caller.command::<EnvironmentAggregate>(id, command).await?;
    }
    let environment = Environment::read(&caller, id).await?;
    Ok(Json(environment.row.into()))
}

/// One environment.
#[utoipa::path(get, path = "/environments/{environment_id}", tag = "environments",
    params(("environment_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentResponse)))]
async fn get_environment(
    caller: Caller,
    ApiPath(environment_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    let environment = Environment::read(&caller, environment_id).await?;
    Ok(Json(environment.row.into()))
}

/// Changes name or description.
#[utoipa::path(patch, path = "/environments/{environment_id}", tag = "environments",
    params(("environment_id" = Uuid, Path)), request_body = SandboxEnvironmentUpdateRequest,
    responses((status = 200, body = SandboxEnvironmentResponse)))]
async fn update_environment(
    caller: Caller,
    ApiPath(environment_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<SandboxEnvironmentUpdateRequest>,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    Environment::managed(&caller, environment_id).await?;
    if body.name.is_none() && body.description.is_none() {
        return Err(no_fields());
    }
    check_text(body.name.as_deref(), body.description.as_deref())?;
    let command = EnvironmentCommand::Update {
        name: body.name,
        description: body.description,
    };
    changed(&caller, environment_id, command).await
}

/// Archives the environment (it stops counting toward the active limit).
#[utoipa::path(post, path = "/environments/{environment_id}/archive", tag = "environments",
    params(("environment_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentResponse)))]
async fn archive_environment(
    caller: Caller,
    ApiPath(environment_id): ApiPath<Uuid>,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    Environment::managed(&caller, environment_id).await?;
    let command = EnvironmentCommand::Archive;
    changed(&caller, environment_id, command).await
}

/// Runs a command on a managed environment and answers it as it stands afterwards.
async fn changed(
    caller: &Caller,
    id: Uuid,
    command: EnvironmentCommand,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    caller.command::<EnvironmentAggregate>(id, command).await?;
    let environment = Environment::read(caller, id).await?;
    Ok(Json(environment.row.into()))
}
