//! Stored views: `GET/POST .../tables/{table_id}/views` and
//! `GET/PATCH/DELETE .../views/{view_id}`. A view is a saved filter, sort and
//! projection; search and export accept its id, and public read tokens will publish
//! one.

use super::columns::SuccessResponse;
use super::gates::Operation;
use super::scope::{Mount, OpenTable, open_table};
use super::selection::SortSpec;
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::extract::double_option;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::tables::table::{SortKey, TableCommand, ViewDef, ViewSpec};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::types::Json as SqlJson;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// View routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_views, create_view))
        .routes(routes!(get_view, update_view, delete_view))
}

/// A view to save.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ViewCreate {
    /// Display name (1..100 characters).
    #[schema(schema_with = crate::openapi::shapes::name_100)]
    pub name: String,
    /// Row filter (as in search).
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Value>,
    /// Sort keys.
    pub sort: Option<Vec<SortSpec>>,
    /// Projected columns (internal keys or display names); null means all.
    pub columns: Option<Vec<String>>,
}

/// A change of a view; absent fields keep their value.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ViewUpdate {
    /// New name.
    pub name: Option<String>,
    /// New filter (null removes it).
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Option<Value>>,
    /// New sort keys.
    pub sort: Option<Vec<SortSpec>>,
    /// New projection (null means all columns).
    #[serde(default, deserialize_with = "double_option")]
    pub columns: Option<Option<Vec<String>>>,
}

/// One sort key of a view.
#[derive(Debug, Serialize, ToSchema)]
pub struct ViewSort {
    /// Internal key or system field.
    pub column: String,
    /// `asc` or `desc`.
    pub order: String,
}

/// A stored view (references as internal keys).
#[derive(Debug, Serialize, ToSchema)]
pub struct ViewResponse {
    /// Id.
    pub id: Uuid,
    /// Its table.
    pub table_id: Uuid,
    /// Display name.
    pub name: String,
    /// Row filter.
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Value>,
    /// Sort keys.
    pub sort: Vec<ViewSort>,
    /// Projected columns; null means all.
    pub columns: Option<Vec<String>>,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

fn sort_keys(keys: Option<Vec<SortSpec>>) -> Vec<SortKey> {
    keys.unwrap_or_default()
        .into_iter()
        .map(|k| SortKey {
            column: k.column,
            order: k.order.unwrap_or_else(|| "asc".into()),
        })
        .collect()
}

async fn views(
    state: &AppState,
    table: &OpenTable,
    view_id: Option<Uuid>,
) -> ApiResult<Vec<ViewResponse>> {
    let rows: Vec<(SqlJson<ViewDef>, DateTime<Utc>, DateTime<Utc>)> = sqlx::query_as(
        "SELECT definition, created_at, updated_at FROM custom_table_views
          WHERE table_id = $1 AND ($2::uuid IS NULL OR id = $2) ORDER BY created_at, id",
    )
    .bind(table.row.id)
    .bind(view_id)
    .fetch_all(&state.pool)
    .await?;
    // A view filtering or sorting by a column hidden from the caller is not shown.
    let hidden = &table.access.hidden;
    Ok(rows
        .into_iter()
        .filter(|(view, ..)| table.sees_view(&view.0))
        .map(|(view, created_at, updated_at)| {
            let view = view.0;
            ViewResponse {
                id: view.id,
                table_id: table.row.id,
                name: view.name,
                filter: view.filter,
                sort: view
                    .sort
                    .into_iter()
                    .map(|k| ViewSort {
                        column: k.column,
                        order: k.order,
                    })
                    .collect(),
                columns: view
                    .columns
                    .map(|keys| keys.into_iter().filter(|k| !hidden.contains(k)).collect()),
                created_at,
                updated_at,
            }
        })
        .collect())
}

async fn one(state: &AppState, table: &OpenTable, view_id: Uuid) -> ApiResult<ViewResponse> {
    views(state, table, Some(view_id))
        .await?
        .pop()
        .ok_or(ApiError::NotFound)
}

/// The table's views.
#[utoipa::path(get, path = "/tables/{table_id}/views", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = Vec<ViewResponse>)))]
async fn list_views(caller: Caller, mount: Mount) -> ApiResult<Json<Vec<ViewResponse>>> {
    let table = open_table(&caller, &mount, Operation::ReadRows).await?;
    Ok(Json(views(&caller.state, &table, None).await?))
}

/// Saves a view (table managers).
#[utoipa::path(post, path = "/tables/{table_id}/views", tag = "custom_tables", request_body = ViewCreate,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 201, body = ViewResponse)))]
async fn create_view(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<ViewCreate>,
) -> ApiResult<(StatusCode, Json<ViewResponse>)> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let view_id = Uuid::new_v4();
    let spec = ViewSpec {
        name: body.name,
        filter: body.filter,
        sort: sort_keys(body.sort),
        columns: body.columns,
    };
    table
        .execute(TableCommand::CreateView { view_id, spec })
        .await?;
    Ok((
        StatusCode::CREATED,
        Json(one(&caller.state, &table, view_id).await?),
    ))
}

/// One view.
#[utoipa::path(get, path = "/tables/{table_id}/views/{view_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("view_id" = Uuid, Path, description = "The view")),
    responses((status = 200, body = ViewResponse)))]
async fn get_view(caller: Caller, mount: Mount) -> ApiResult<Json<ViewResponse>> {
    let table = open_table(&caller, &mount, Operation::ReadRows).await?;
    Ok(Json(
        one(&caller.state, &table, mount.uuid("view_id")?).await?,
    ))
}

/// Changes a view (table managers).
#[utoipa::path(patch, path = "/tables/{table_id}/views/{view_id}", tag = "custom_tables", request_body = ViewUpdate,
    params(("table_id" = Uuid, Path, description = "The table"), ("view_id" = Uuid, Path, description = "The view")),
    responses((status = 200, body = ViewResponse)))]
async fn update_view(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<ViewUpdate>,
) -> ApiResult<Json<ViewResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let view_id = mount.uuid("view_id")?;
    let current = one(&caller.state, &table, view_id).await?;
    let spec = ViewSpec {
        name: body.name.unwrap_or(current.name),
        filter: body.filter.unwrap_or(current.filter),
        sort: match body.sort {
            Some(keys) => sort_keys(Some(keys)),
            None => current
                .sort
                .into_iter()
                .map(|k| SortKey {
                    column: k.column,
                    order: k.order,
                })
                .collect(),
        },
        columns: body.columns.unwrap_or(current.columns),
    };
    table
        .execute(TableCommand::UpdateView { view_id, spec })
        .await?;
    Ok(Json(one(&caller.state, &table, view_id).await?))
}

/// Deletes a view (table managers).
#[utoipa::path(delete, path = "/tables/{table_id}/views/{view_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("view_id" = Uuid, Path, description = "The view")),
    responses((status = 200, body = SuccessResponse)))]
async fn delete_view(caller: Caller, mount: Mount) -> ApiResult<Json<SuccessResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let view_id = mount.uuid("view_id")?;
    table.execute(TableCommand::DeleteView { view_id }).await?;
    Ok(Json(SuccessResponse {
        message: "View deleted".into(),
    }))
}
