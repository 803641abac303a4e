//! Grant routes of a table (spec section 4, "Other grant routes"): per-user,
//! per-department and per-chatroom grants, per-client grants, the default grant,
//! client access, and the caller's own effective permission. Every write is a
//! table-manager operation.

use super::access::{Access, Floor};
use super::columns::SuccessResponse;
use super::gates::Operation;
use super::grant_body::{self, GrantBody, GrantResponse, SubjectGrant, named_subject};
use super::scope::{Mount, open_table};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::openapi::enums::string_enum;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::tables::access::Source;
use domain::tables::grants::{EditMode, Grant, ReadMode, Subject};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Grant routes of every mount.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_permissions, set_permission))
        .routes(routes!(my_permissions))
        .routes(routes!(revoke_permission))
        .routes(routes!(set_client_permission, revoke_client_permission))
        .routes(routes!(patch_default_permissions))
}

/// A grant for a user, department or chatroom.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct PermissionCreate {
    /// `user`, `department` or `chatroom`.
    pub subject_type: String,
    /// The user, department or chatroom.
    pub subject_id: Uuid,
    /// `all`, `own`, `filtered` or `none`.
    #[schema(schema_with = string_enum::<ReadMode>)]
    pub can_read: ReadMode,
    /// Whether records may be created.
    #[serde(default)]
    pub can_insert: bool,
    /// `all`, `own` or `none` (default).
    #[schema(schema_with = string_enum::<EditMode>)]
    pub can_edit: Option<EditMode>,
    /// The row policy of `can_read: filtered`.
    #[schema(value_type = Option<Object>)]
    pub row_filter: Option<Value>,
    /// Hidden columns (internal keys or display names).
    #[serde(default)]
    pub hidden_columns: Vec<String>,
    /// Chatroom grants: values of the channel scope column.
    #[serde(default)]
    pub scope_values: Vec<String>,
}

/// Every grant of a table.
#[derive(Debug, Serialize, ToSchema)]
pub struct PermissionListResponse {
    /// Grants of users, clients, departments and chatrooms, oldest first.
    pub permissions: Vec<GrantResponse>,
    /// The default grant.
    pub default: GrantResponse,
    /// Whether social media clients may reach the table.
    pub client_access: bool,
}

/// The caller's effective permission.
#[derive(Debug, Serialize, ToSchema)]
pub struct EffectivePermission {
    /// The deciding step: `table_manager`, `user`, `department`, `chatroom` or
    /// `default`.
    #[schema(value_type = String)]
    pub source: Source,
    /// `all`, `own`, `filtered` or `none`.
    #[schema(schema_with = string_enum::<ReadMode>)]
    pub can_read: ReadMode,
    /// Whether records may be created.
    pub can_insert: bool,
    /// `all`, `own` or `none`.
    #[schema(schema_with = string_enum::<EditMode>)]
    pub can_edit: EditMode,
    /// The row policy (several folded room policies as `{or: [...]}`).
    #[schema(value_type = Option<Object>)]
    pub row_filter: Option<Value>,
    /// Internal keys of the columns hidden from the caller.
    pub hidden_columns: Vec<String>,
    /// The rooms whose grants were folded (chatroom step).
    pub chatroom_ids: Vec<Uuid>,
    /// Whether a channel policy governs the caller on this table.
    pub governed: bool,
    /// The scope values the caller's rooms reach (governed callers), `[]` without an
    /// eligible room.
    #[schema(value_type = Option<Vec<Object>>)]
    pub scope_values: Option<Vec<Value>>,
}

impl EffectivePermission {
    fn of(access: &Access) -> Option<Self> {
        let (governed, scope_values) = match &access.floor {
            Floor::Open => (false, None),
            Floor::Rooms { values, .. } => (true, Some(values.clone())),
            Floor::NoRoom => (true, Some(Vec::new())),
        };
        Some(Self {
            source: access.source?,
            can_read: access.read_mode,
            can_insert: access.insert,
            can_edit: access.edit_mode,
            row_filter: access.row_filter.clone(),
            hidden_columns: access.hidden.clone(),
            chatroom_ids: access.rooms.clone(),
            governed,
            scope_values,
        })
    }
}

/// Every grant of the table (table managers).
#[utoipa::path(get, path = "/tables/{table_id}/permissions", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = PermissionListResponse)))]
async fn list_permissions(caller: Caller, mount: Mount) -> ApiResult<Json<PermissionListResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let permissions = table
        .grants
        .iter()
        .filter(|g| g.subject != Subject::Default)
        .map(|g| GrantResponse::of(g.subject, g.grant.clone()))
        .collect();
    Ok(Json(PermissionListResponse {
        permissions,
        default: GrantResponse::of(Subject::Default, table.default_grant()),
        client_access: table.row.client_access,
    }))
}

/// Sets the grant of a user, department or chatroom (replacing its previous one).
#[utoipa::path(post, path = "/tables/{table_id}/permissions", tag = "custom_tables", request_body = PermissionCreate,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = GrantResponse)))]
async fn set_permission(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<PermissionCreate>,
) -> ApiResult<Json<GrantResponse>> {
    let subject = named_subject(&body.subject_type, body.subject_id)?;
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let grant = Grant {
        can_read: body.can_read,
        can_insert: body.can_insert,
        can_edit: body.can_edit.unwrap_or(EditMode::None),
        row_filter: body.row_filter,
        hidden_columns: body.hidden_columns,
        scope_values: body.scope_values,
    };
    Ok(Json(grant_body::set(&table, subject, grant).await?))
}

/// The caller's effective permission on the table.
#[utoipa::path(get, path = "/tables/{table_id}/permissions/me", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = EffectivePermission)))]
async fn my_permissions(caller: Caller, mount: Mount) -> ApiResult<Json<EffectivePermission>> {
    let table = open_table(&caller, &mount, Operation::ReadTable).await?;
    EffectivePermission::of(&table.access)
        .map(Json)
        .ok_or(ApiError::NotFound)
}

/// Revokes the grant of a user, department or chatroom.
#[utoipa::path(delete, path = "/tables/{table_id}/permissions/{subject_type}/{subject_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"),
           ("subject_type" = String, Path, description = "user, department or chatroom"),
           ("subject_id" = Uuid, Path, description = "The subject")),
    responses((status = 200, body = SuccessResponse)))]
async fn revoke_permission(grant: SubjectGrant) -> ApiResult<Json<SuccessResponse>> {
    grant.revoke().await
}

/// Sets the grant of a social media client.
#[utoipa::path(put, path = "/tables/{table_id}/client-permissions/{client_id}", tag = "custom_tables", request_body = GrantBody,
    params(("table_id" = Uuid, Path, description = "The table"), ("client_id" = Uuid, Path, description = "The social media client")),
    responses((status = 200, body = GrantResponse)))]
async fn set_client_permission(
    grant: SubjectGrant,
    ApiJson(body): ApiJson<GrantBody>,
) -> ApiResult<Json<GrantResponse>> {
    grant.set(body.into()).await
}

/// Revokes the grant of a social media client.
#[utoipa::path(delete, path = "/tables/{table_id}/client-permissions/{client_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("client_id" = Uuid, Path, description = "The social media client")),
    responses((status = 200, body = SuccessResponse)))]
async fn revoke_client_permission(grant: SubjectGrant) -> ApiResult<Json<SuccessResponse>> {
    grant.revoke().await
}

/// A change of the default grant: named fields change, others stay.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DefaultPermissionsPatch {
    /// `all`, `own`, `filtered` or `none`.
    #[schema(schema_with = string_enum::<ReadMode>)]
    pub can_read: Option<ReadMode>,
    /// Whether records may be created.
    pub can_insert: Option<bool>,
    /// `all`, `own` or `none`.
    #[schema(schema_with = string_enum::<EditMode>)]
    pub can_edit: Option<EditMode>,
    /// The row policy (`null` clears it).
    #[serde(default, deserialize_with = "crate::extract::double_option")]
    #[schema(value_type = Option<Object>)]
    pub row_filter: Option<Option<Value>>,
    /// Hidden columns.
    pub hidden_columns: Option<Vec<String>>,
}

/// Changes the default grant (callers entering the owning scope whom no other step
/// matches).
#[utoipa::path(patch, path = "/tables/{table_id}/default-permissions", tag = "custom_tables", request_body = DefaultPermissionsPatch,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = GrantResponse)))]
async fn patch_default_permissions(
    grant: SubjectGrant,
    ApiJson(body): ApiJson<DefaultPermissionsPatch>,
) -> ApiResult<Json<GrantResponse>> {
    let current = grant.table.default_grant();
    let changed = Grant {
        can_read: body.can_read.unwrap_or(current.can_read),
        can_insert: body.can_insert.unwrap_or(current.can_insert),
        can_edit: body.can_edit.unwrap_or(current.can_edit),
        row_filter: body.row_filter.unwrap_or(current.row_filter),
        hidden_columns: body.hidden_columns.unwrap_or(current.hidden_columns),
        scope_values: Vec::new(),
    };
    grant.set(changed).await
}
