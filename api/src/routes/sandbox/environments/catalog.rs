//! The environment resources themselves: `GET/POST /environments`, `GET/PATCH /environments/{id}`,
//! `POST /environments/{id}/archive`.

use super::access::{self, ENVIRONMENT_COLUMNS, EnvironmentRow};
use super::views::*;
use crate::admission;
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::limits::company_limits;
use crate::pagination::{LifecycleQuery, finish};
use crate::request::Context;
use crate::routes::sandbox::owners::{check_text, no_fields, resolve_owner};
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use chrono::{DateTime, Utc};
use domain::environments::environment::{
    Environment, EnvironmentCommand, EnvironmentCreated, OwnerKind, OwnerScope,
};
use domain::error::Code;
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
    State(state): State<AppState>,
    Auth(principal): Auth,
    ApiQuery(query): ApiQuery<LifecycleQuery>,
) -> ApiResult<Json<SandboxEnvironmentListResponse>> {
    let page = query.page::<(DateTime<Utc>, Uuid)>(50)?;
    let lifecycle = query.lifecycle.unwrap_or_default();
    let (after_time, after_id) = page
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    let rows: Vec<EnvironmentRow> = sqlx::query_as(&format!(
        "SELECT {ENVIRONMENT_COLUMNS} FROM environments
          WHERE (company_id = $1 OR owner_kind = 'system_curated')
            AND ($2 = 'all' OR ($2 = 'active') = (lifecycle = 'active'))
            AND (created_at, id) < ($3, $4)
          ORDER BY created_at DESC, id DESC
          LIMIT $5"
    ))
    .bind(principal.company_id)
    .bind(lifecycle_name(lifecycle))
    .bind(after_time)
    .bind(after_id)
    .bind(page.size + 1)
    .fetch_all(&state.pool)
    .await?;
    let (rows, next_page_token) = finish(rows, page.size, |r| (r.created_at, r.id));
    Ok(Json(SandboxEnvironmentListResponse {
        items: rows.into_iter().map(Into::into).collect(),
        next_page_token,
    }))
}

/// The SQL-side name of a lifecycle filter.
pub fn lifecycle_name(filter: crate::pagination::LifecycleFilter) -> &'static str {
    match filter {
        crate::pagination::LifecycleFilter::Active => "active",
        crate::pagination::LifecycleFilter::Retired => "retired",
        crate::pagination::LifecycleFilter::All => "all",
    }
}

/// Creates a company- or department-owned environment.
#[utoipa::path(post, path = "/environments", tag = "environments", request_body = SandboxEnvironmentCreateRequest,
    responses((status = 200, body = SandboxEnvironmentResponse),
              (status = 403, description = "owner_scope_forbidden"),
              (status = 409, description = "active_environment_limit"),
              (status = 422, description = "validation error")))]
async fn create_environment(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    ApiJson(body): ApiJson<SandboxEnvironmentCreateRequest>,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    check_text(Some(&body.name), Some(&body.description))?;
    let scope = body.owner_scope.unwrap_or(OwnerScope::Company);
    let owner_id = resolve_owner(&state, &principal, scope, body.owner_id).await?;
    let id = Uuid::new_v4();
    {
        let _lock = admission::lock(&state.pool, principal.company_id, "environments").await?;
        let limit = company_limits(&state, principal.company_id)
            .await?
            .active_environment_limit;
        let active: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM environments WHERE company_id = $1 AND lifecycle = 'active'",
        )
        .bind(principal.company_id)
        .fetch_one(&state.pool)
        .await?;
        if active >= limit {
            return Err(ApiError::code(
                Code::ActiveEnvironmentLimit,
                format!("the company already has {active} active environments (limit {limit})"),
            )
            .with("limit", limit));
        }
        let created = EnvironmentCreated {
            environment_id: id,
            company_id: Some(principal.company_id),
            owner_kind: OwnerKind::Company,
            owner_scope: scope,
            owner_id: Some(owner_id),
            name: body.name,
            description: body.description,
        };
        state
            .bus
            .execute::<Environment>(
                &id.to_string(),
                EnvironmentCommand::Create(created),
                &ctx.metadata(&principal),
            )
            .await?;
    }
    Ok(Json(
        access::environment(&state, &principal, id)
            .await?
            .row
            .into(),
    ))
}

/// One environment.
#[utoipa::path(get, path = "/environments/{environment_id}", tag = "environments",
    params(("environment_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentResponse), (status = 404, description = "not found")))]
async fn get_environment(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(environment_id): Path<Uuid>,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    Ok(Json(
        access::environment(&state, &principal, environment_id)
            .await?
            .row
            .into(),
    ))
}

/// Changes name or description.
#[utoipa::path(patch, path = "/environments/{environment_id}", tag = "environments",
    params(("environment_id" = Uuid, Path)), request_body = SandboxEnvironmentUpdateRequest,
    responses((status = 200, body = SandboxEnvironmentResponse), (status = 404, description = "not found"),
              (status = 409, description = "environment_archived"), (status = 422, description = "no_fields")))]
async fn update_environment(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(environment_id): Path<Uuid>,
    ApiJson(body): ApiJson<SandboxEnvironmentUpdateRequest>,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    access::managed_environment(&state, &principal, environment_id).await?;
    if body.name.is_none() && body.description.is_none() {
        return Err(no_fields());
    }
    check_text(body.name.as_deref(), body.description.as_deref())?;
    let command = EnvironmentCommand::Update {
        name: body.name,
        description: body.description,
    };
    state
        .bus
        .execute::<Environment>(
            &environment_id.to_string(),
            command,
            &ctx.metadata(&principal),
        )
        .await?;
    Ok(Json(
        access::environment(&state, &principal, environment_id)
            .await?
            .row
            .into(),
    ))
}

/// Archives the environment (it stops counting toward the active limit).
#[utoipa::path(post, path = "/environments/{environment_id}/archive", tag = "environments",
    params(("environment_id" = Uuid, Path)),
    responses((status = 200, body = SandboxEnvironmentResponse), (status = 404, description = "not found"),
              (status = 409, description = "already_archived")))]
async fn archive_environment(
    State(state): State<AppState>,
    ctx: Context,
    Auth(principal): Auth,
    Path(environment_id): Path<Uuid>,
) -> ApiResult<Json<SandboxEnvironmentResponse>> {
    access::managed_environment(&state, &principal, environment_id).await?;
    state
        .bus
        .execute::<Environment>(
            &environment_id.to_string(),
            EnvironmentCommand::Archive,
            &ctx.metadata(&principal),
        )
        .await?;
    Ok(Json(
        access::environment(&state, &principal, environment_id)
            .await?
            .row
            .into(),
    ))
}
