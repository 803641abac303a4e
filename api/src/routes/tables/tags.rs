//! Table tags (spec `custom-tables.md` section 2, "REST-only steps around a JSONL
//! deployment"): `POST {scope_mount}/table-tags` (body name, description, color),
//! `GET {scope_mount}/table-tags`, and `POST` / `DELETE
//! {scope_mount}/table-tags/{tag_id}/tables/{table_id}`. The scope's managers create
//! tags; a table's moderators put its tags on and take them off; whoever lists the
//! scope's tables lists its tags. A Command's `tag_id` names one of these.

use super::gates::Operation;
use super::scope::{Mount, enter_scope, open_table_id};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::tables::scope::ScopeRef;
use domain::tables::tag::{TableTag, TagCommand, TagTerms};
use projections::read_models::table_tags::query::{self as tags, TagRow};
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The tag routes of every mount.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tags, create_tag))
        .routes(routes!(attach_tag, detach_tag))
}

/// A new tag.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TagCreate {
    /// 1..100 characters, unique in the scope (case-insensitive).
    pub name: String,
    /// Free text (at most 2000 characters).
    pub description: Option<String>,
    /// `#rrggbb`.
    pub color: Option<String>,
}

/// A tag of the scope.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagResponse {
    /// The tag (a Command's `tag_id`).
    pub id: Uuid,
    /// Name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// `#rrggbb`.
    pub color: Option<String>,
    /// The deployment system whose system tag it is (null for a REST tag).
    pub system: Option<String>,
    /// The tables carrying it.
    pub table_ids: Vec<Uuid>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
}

impl From<TagRow> for TagResponse {
    fn from(row: TagRow) -> Self {
        Self {
            id: row.id,
            name: row.name,
            description: row.description,
            color: row.color,
            system: row.system,
            table_ids: row.table_ids,
            created_at: row.created_at,
        }
    }
}

/// The scope's tags.
#[derive(Debug, Serialize, ToSchema)]
pub struct TagListResponse {
    /// Oldest first.
    pub tags: Vec<TagResponse>,
    /// How many.
    pub total: usize,
}

async fn one(caller: &Caller, scope: ScopeRef, id: Uuid) -> ApiResult<TagResponse> {
    tags::tag(caller.pool(), caller.principal.company_id, scope, id)
        .await?
        .map(TagResponse::from)
        .ok_or(ApiError::NotFound)
}

/// The scope's tags with the tables carrying them.
#[utoipa::path(get, path = "/table-tags", tag = "custom_tables",
    responses((status = 200, body = TagListResponse)))]
async fn list_tags(caller: Caller, mount: Mount) -> ApiResult<Json<TagListResponse>> {
    let (scope, _) = enter_scope(&caller, &mount, Operation::ListOrCreateTables).await?;
    let tags: Vec<TagResponse> =
        tags::scope_tags(caller.pool(), caller.principal.company_id, scope)
            .await?
            .into_iter()
            .map(TagResponse::from)
            .collect();
    Ok(Json(TagListResponse {
        total: tags.len(),
        tags,
    }))
}

/// Creates a tag of the scope (the scope's managers); 409 `already_exists` when
/// the scope has a tag of that name.
#[utoipa::path(post, path = "/table-tags", tag = "custom_tables", request_body = TagCreate,
    responses((status = 201, body = TagResponse)))]
async fn create_tag(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<TagCreate>,
) -> ApiResult<(StatusCode, Json<TagResponse>)> {
    let (scope, _) = enter_scope(&caller, &mount, Operation::ManageScope).await?;
    let company = caller.principal.company_id;
    if tags::named(caller.pool(), company, scope, &body.name)
        .await?
        .is_some()
    {
        return Err(ApiError::code(
            Code::AlreadyExists,
            format!("the scope has a tag named '{}'", body.name.trim()),
        ));
    }
    let tag_id = Uuid::new_v4();
    let terms = TagTerms {
        tag_id,
        company_id: company,
        scope,
        name: body.name,
        description: body.description,
        color: body.color,
        system: None,
        created_by: caller.principal.reference(),
    };
    caller
        .command::<TableTag>(tag_id, TagCommand::Create(Box::new(terms)))
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(one(&caller, scope, tag_id).await?),
    ))
}

/// Puts a tag of the scope on a table of the scope (the table's moderators).
#[utoipa::path(post, path = "/table-tags/{tag_id}/tables/{table_id}", tag = "custom_tables",
    params(("tag_id" = Uuid, Path, description = "The tag"), ("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = TagResponse)))]
async fn attach_tag(caller: Caller, mount: Mount) -> ApiResult<Json<TagResponse>> {
    tag_table(caller, mount, |table_id| TagCommand::Attach { table_id }).await
}

/// Takes a tag off a table (the table's moderators).
#[utoipa::path(delete, path = "/table-tags/{tag_id}/tables/{table_id}", tag = "custom_tables",
    params(("tag_id" = Uuid, Path, description = "The tag"), ("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = TagResponse)))]
async fn detach_tag(caller: Caller, mount: Mount) -> ApiResult<Json<TagResponse>> {
    tag_table(caller, mount, |table_id| TagCommand::Detach { table_id }).await
}

async fn tag_table(
    caller: Caller,
    mount: Mount,
    command: impl FnOnce(Uuid) -> TagCommand,
) -> ApiResult<Json<TagResponse>> {
    let table = open_table_id(
        &caller,
        &mount,
        mount.uuid("table_id")?,
        Operation::ManageTable,
    )
    .await?;
    let tag_id = mount.uuid("tag_id")?;
    one(&caller, table.scope, tag_id).await?;
    caller
        .command::<TableTag>(tag_id, command(table.row.id))
        .await?;
    Ok(Json(one(&caller, table.scope, tag_id).await?))
}
