//! `POST`/`GET /groups` and `POST`/`GET /templates`: company managers define who
//! reviews (a group of company users) and how (a template's gates, each decided
//! by one group).

use crate::access::require_company_manager;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::review::{
    Gate, ReviewGroup, ReviewGroupCommand, ReviewGroupTerms, ReviewTemplate, ReviewTemplateCommand,
    ReviewTemplateTerms,
};
use projections::read_models::directory::query as directory;
use projections::read_models::review::query::{self as review, GroupRow, TemplateRow};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The definition routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(create_group, list_groups))
        .routes(routes!(create_template, list_templates))
}

/// A new review group.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GroupCreate {
    /// 1..200 characters.
    #[schema(schema_with = crate::openapi::shapes::name_200)]
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// 1..100 users of the company, none twice.
    #[schema(min_items = 1, max_items = 100)]
    pub member_ids: Vec<Uuid>,
}

/// A review group.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupResponse {
    /// The group.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Its users.
    #[schema(min_items = 1, max_items = 100)]
    pub member_ids: Vec<Uuid>,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

impl From<GroupRow> for GroupResponse {
    fn from(r: GroupRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            description: r.description,
            member_ids: r.member_ids,
            created_at: r.created_at,
        }
    }
}

/// The company's groups.
#[derive(Debug, Serialize, ToSchema)]
pub struct GroupListResponse {
    /// Oldest first.
    pub groups: Vec<GroupResponse>,
}

/// A new review template.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TemplateCreate {
    /// 1..200 characters.
    #[schema(schema_with = crate::openapi::shapes::name_200)]
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// 1..10 gates `{name, condition: {type: group, group_id, mode: any}}`; all
    /// must pass.
    #[schema(value_type = Vec<Object>, min_items = 1, max_items = 10)]
    pub gates: Vec<Gate>,
    /// Whether each approval must carry a signature (default false).
    #[serde(default)]
    pub require_signature: bool,
}

/// A review template.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateResponse {
    /// The template.
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: Option<String>,
    /// Its gates.
    #[schema(value_type = Vec<Object>, min_items = 1, max_items = 10)]
    pub gates: Vec<Gate>,
    /// Whether approvals carry a signature.
    pub require_signature: bool,
    /// When it was created.
    pub created_at: DateTime<Utc>,
}

impl From<TemplateRow> for TemplateResponse {
    fn from(r: TemplateRow) -> Self {
        Self {
            id: r.id,
            name: r.name,
            description: r.description,
            gates: r.gates.0,
            require_signature: r.require_signature,
            created_at: r.created_at,
        }
    }
}

/// The company's templates.
#[derive(Debug, Serialize, ToSchema)]
pub struct TemplateListResponse {
    /// Oldest first.
    pub templates: Vec<TemplateResponse>,
}

fn invalid(message: impl Into<String>) -> ApiError {
    ApiError::code(Code::ReviewConfigInvalid, message)
}

/// Creates a review group (company managers).
#[utoipa::path(post, path = "/groups", tag = "review", request_body = GroupCreate,
    responses((status = 201, body = GroupResponse)))]
async fn create_group(
    caller: Caller,
    ApiJson(body): ApiJson<GroupCreate>,
) -> ApiResult<(StatusCode, Json<GroupResponse>)> {
    require_company_manager(&caller.principal)?;
    let company = caller.principal.company_id;
    let known = directory::users_in_company(caller.pool(), company, &body.member_ids).await?;
    if let Some(stranger) = body.member_ids.iter().find(|id| !known.contains(id)) {
        return Err(invalid(format!(
            "member {stranger} is not a user of the company"
        )));
    }
    let group_id = Uuid::new_v4();
    let terms = ReviewGroupTerms {
        group_id,
        company_id: company,
        name: body.name,
        description: body.description,
        member_ids: body.member_ids,
        created_by: caller.principal.reference(),
    };
    caller
        .command::<ReviewGroup>(group_id, ReviewGroupCommand::Create(Box::new(terms)))
        .await?;
    let row = review::groups_in(caller.pool(), company, &[group_id])
        .await?
        .pop()
        .ok_or(ApiError::NotFound)?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// The company's review groups (company managers).
#[utoipa::path(get, path = "/groups", tag = "review",
    responses((status = 200, body = GroupListResponse)))]
async fn list_groups(caller: Caller) -> ApiResult<Json<GroupListResponse>> {
    require_company_manager(&caller.principal)?;
    let rows = review::groups(caller.pool(), caller.principal.company_id).await?;
    Ok(Json(GroupListResponse {
        groups: rows.into_iter().map(GroupResponse::from).collect(),
    }))
}

/// Creates a review template (company managers); its gates name groups of the
/// company.
#[utoipa::path(post, path = "/templates", tag = "review", request_body = TemplateCreate,
    responses((status = 201, body = TemplateResponse)))]
async fn create_template(
    caller: Caller,
    ApiJson(body): ApiJson<TemplateCreate>,
) -> ApiResult<(StatusCode, Json<TemplateResponse>)> {
    require_company_manager(&caller.principal)?;
    let company = caller.principal.company_id;
    let named: Vec<Uuid> = body.gates.iter().map(|g| g.condition.group_id).collect();
    let known = review::groups_in(caller.pool(), company, &named).await?;
    if let Some(unknown) = named.iter().find(|id| !known.iter().any(|g| g.id == **id)) {
        return Err(invalid(format!("review group {unknown} does not exist")));
    }
    let template_id = Uuid::new_v4();
    let terms = ReviewTemplateTerms {
        template_id,
        company_id: company,
        name: body.name,
        description: body.description,
        gates: body.gates,
        require_signature: body.require_signature,
        created_by: caller.principal.reference(),
    };
    caller
        .command::<ReviewTemplate>(template_id, ReviewTemplateCommand::Create(Box::new(terms)))
        .await?;
    let row = review::template(caller.pool(), company, template_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok((StatusCode::CREATED, Json(row.into())))
}

/// The company's review templates (company managers).
#[utoipa::path(get, path = "/templates", tag = "review",
    responses((status = 200, body = TemplateListResponse)))]
async fn list_templates(caller: Caller) -> ApiResult<Json<TemplateListResponse>> {
    require_company_manager(&caller.principal)?;
    let rows = review::templates(caller.pool(), caller.principal.company_id).await?;
    Ok(Json(TemplateListResponse {
        templates: rows.into_iter().map(TemplateResponse::from).collect(),
    }))
}
