//! Table routes: `GET/POST {scope_mount}/tables` and
//! `GET/PATCH/DELETE {scope_mount}/tables/{table_id}`.

use super::column_schema::{ColumnResponse, double_option};
use super::columns::SuccessResponse;
use super::errors::CommandResultExt;
use super::gates::Operation;
use super::scope::{Mount, OpenTable, TableRow, enter_scope, open_table};
use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::request::Context;
use crate::state::AppState;
use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::tables::column::ColumnDef;
use domain::tables::table::{CustomTable, TableCommand};
use serde::{Deserialize, Serialize};
use sqlx::types::Json as SqlJson;
use std::collections::HashMap;
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Table routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_tables, create_table))
        .routes(routes!(get_table, update_table, delete_table))
}

/// A new table.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TableCreate {
    /// Display name (1..200 characters).
    pub name: String,
    /// Free text (at most 2000 characters).
    pub description: Option<String>,
}

/// A change of a table.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TableUpdate {
    /// New name.
    pub name: Option<String>,
    /// New description (null clears).
    #[serde(default, deserialize_with = "double_option")]
    pub description: Option<Option<String>>,
}

/// The owning scope.
#[derive(Debug, Serialize, ToSchema)]
pub struct ScopeResponse {
    /// `chatroom`, `department` or `company`.
    pub kind: String,
    /// Chatroom, department or company id.
    pub id: Uuid,
}

/// A table.
#[derive(Debug, Serialize, ToSchema)]
pub struct TableResponse {
    /// Id.
    pub id: Uuid,
    /// Display name.
    pub name: String,
    /// Free text.
    pub description: Option<String>,
    /// The owning scope; the table is always read and written through its mount.
    pub scope: ScopeResponse,
    /// The creator.
    pub created_by: String,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Live records the caller can read.
    pub record_count: i64,
    /// The columns.
    pub columns: Vec<ColumnResponse>,
    /// The background migration holding the table, if any.
    pub migration_id: Option<Uuid>,
    /// Whether the caller manages the table.
    pub can_manage: bool,
}

/// A page of tables.
#[derive(Debug, Serialize, ToSchema)]
pub struct TableListResponse {
    /// The tables, oldest first.
    pub tables: Vec<TableResponse>,
    /// Tables in the scope.
    pub total: i64,
}

/// Paging of the table list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct TablePage {
    /// Tables to skip.
    pub skip: Option<i64>,
    /// Tables to return, 1..100 (default 50).
    pub limit: Option<i64>,
}

type ColumnRows = HashMap<Uuid, Vec<ColumnResponse>>;

/// A stored column: its table, definition, creation and last change.
type StoredColumn = (Uuid, SqlJson<ColumnDef>, DateTime<Utc>, DateTime<Utc>);

/// The columns of several tables, in one query.
async fn columns_of(state: &AppState, ids: &[Uuid]) -> ApiResult<ColumnRows> {
    let rows: Vec<StoredColumn> = sqlx::query_as(
        "SELECT table_id, definition, created_at, updated_at FROM custom_table_columns
          WHERE table_id = ANY($1) ORDER BY table_id, position",
    )
    .bind(ids)
    .fetch_all(&state.pool)
    .await?;
    let mut out: ColumnRows = HashMap::new();
    for (table_id, def, created, updated) in rows {
        out.entry(table_id)
            .or_default()
            .push(ColumnResponse::of(&def.0, created, updated));
    }
    Ok(out)
}

fn respond(row: TableRow, columns: Vec<ColumnResponse>, can_manage: bool) -> TableResponse {
    TableResponse {
        id: row.id,
        name: row.name,
        description: row.description,
        scope: ScopeResponse {
            kind: row.scope_kind,
            id: row.scope_id,
        },
        created_by: row.created_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
        record_count: row.record_count,
        columns,
        migration_id: row.migration_id,
        can_manage,
    }
}

async fn detail(state: &AppState, table: OpenTable) -> ApiResult<TableResponse> {
    let can_manage = table.is_moderator();
    let id = table.row.id;
    let mut columns = columns_of(state, &[id]).await?;
    Ok(respond(
        table.row,
        columns.remove(&id).unwrap_or_default(),
        can_manage,
    ))
}

/// The tables of the scope.
#[utoipa::path(get, path = "/tables", tag = "custom_tables", params(TablePage),
    responses((status = 200, body = TableListResponse), (status = 404, description = "Not found")))]
async fn list_tables(
    State(state): State<AppState>,
    mount: Mount,
    Auth(principal): Auth,
    ApiQuery(page): ApiQuery<TablePage>,
) -> ApiResult<Json<TableListResponse>> {
    let (skip, limit) = super::records::window(page.skip, page.limit, "query")?;
    let (scope, facts) =
        enter_scope(&state, &principal, &mount, Operation::ListOrCreateTables).await?;
    let rows: Vec<TableRow> = sqlx::query_as(
        "SELECT id, company_id, scope_kind, scope_id, name, description, created_by, created_at, updated_at,
                record_count, migration_id
           FROM custom_tables WHERE company_id = $1 AND scope_kind = $2 AND scope_id = $3
          ORDER BY created_at, id LIMIT $4 OFFSET $5",
    )
    .bind(principal.company_id)
    .bind(scope.kind.as_str())
    .bind(scope.id)
    .bind(limit)
    .bind(skip)
    .fetch_all(&state.pool)
    .await?;
    let total: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM custom_tables WHERE company_id = $1 AND scope_kind = $2 AND scope_id = $3",
    )
    .bind(principal.company_id)
    .bind(scope.kind.as_str())
    .bind(scope.id)
    .fetch_one(&state.pool)
    .await?;
    let ids: Vec<Uuid> = rows.iter().map(|r| r.id).collect();
    let mut columns = columns_of(&state, &ids).await?;
    let tables = rows
        .into_iter()
        .map(|row| {
            let standing = super::gates::Standing {
                table_creator: row.created_by == principal.reference(),
                ..facts.standing
            };
            let can_manage = super::gates::moderator(scope.kind, &standing);
            let cols = columns.remove(&row.id).unwrap_or_default();
            respond(row, cols, can_manage)
        })
        .collect();
    Ok(Json(TableListResponse { tables, total }))
}

/// Creates a table owned by the mount's scope.
#[utoipa::path(post, path = "/tables", tag = "custom_tables", request_body = TableCreate,
    responses((status = 201, body = TableResponse), (status = 400, description = "Invalid name"),
              (status = 403, description = "Insufficient permissions."), (status = 404, description = "Not found")))]
async fn create_table(
    State(state): State<AppState>,
    ctx: Context,
    mount: Mount,
    Auth(principal): Auth,
    ApiJson(body): ApiJson<TableCreate>,
) -> ApiResult<(StatusCode, Json<TableResponse>)> {
    let (scope, _) = enter_scope(&state, &principal, &mount, Operation::ListOrCreateTables).await?;
    if principal.principal_type != domain::principal::PrincipalType::User {
        return Err(ApiError::Forbidden(crate::authz::INSUFFICIENT));
    }
    let table_id = Uuid::new_v4();
    let command = TableCommand::Create {
        table_id,
        company_id: principal.company_id,
        scope,
        name: body.name,
        description: body.description,
        created_by: principal.reference(),
    };
    state
        .bus
        .execute::<CustomTable>(&table_id.to_string(), command, &ctx.metadata(&principal))
        .await
        .answer()?;
    let table =
        super::scope::open_table_id(&state, &principal, &mount, table_id, Operation::ReadRows)
            .await?;
    Ok((StatusCode::CREATED, Json(detail(&state, table).await?)))
}

/// One table with its columns.
#[utoipa::path(get, path = "/tables/{table_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = TableResponse), (status = 404, description = "Not found")))]
async fn get_table(
    State(state): State<AppState>,
    mount: Mount,
    Auth(principal): Auth,
) -> ApiResult<Json<TableResponse>> {
    let table = open_table(&state, &principal, &mount, Operation::ReadRows).await?;
    Ok(Json(detail(&state, table).await?))
}

/// Renames a table or changes its description (table managers).
#[utoipa::path(patch, path = "/tables/{table_id}", tag = "custom_tables", request_body = TableUpdate,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = TableResponse), (status = 403, description = "Insufficient permissions."),
              (status = 404, description = "Not found")))]
async fn update_table(
    State(state): State<AppState>,
    ctx: Context,
    mount: Mount,
    Auth(principal): Auth,
    ApiJson(body): ApiJson<TableUpdate>,
) -> ApiResult<Json<TableResponse>> {
    let table = open_table(&state, &principal, &mount, Operation::ManageTable).await?;
    let command = TableCommand::Update {
        name: body.name,
        description: body.description,
    };
    state
        .bus
        .execute::<CustomTable>(
            &table.row.id.to_string(),
            command,
            &ctx.metadata(&principal),
        )
        .await
        .answer()?;
    let table = open_table(&state, &principal, &mount, Operation::ReadRows).await?;
    Ok(Json(detail(&state, table).await?))
}

/// Deletes a table and all its records (table managers).
#[utoipa::path(delete, path = "/tables/{table_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = SuccessResponse), (status = 403, description = "Insufficient permissions."),
              (status = 404, description = "Not found"), (status = 423, description = "A migration holds the table")))]
async fn delete_table(
    State(state): State<AppState>,
    ctx: Context,
    mount: Mount,
    Auth(principal): Auth,
) -> ApiResult<Json<SuccessResponse>> {
    let table = open_table(&state, &principal, &mount, Operation::ManageTable).await?;
    state
        .bus
        .execute::<CustomTable>(
            &table.row.id.to_string(),
            TableCommand::Delete,
            &ctx.metadata(&principal),
        )
        .await
        .answer()?;
    Ok(Json(SuccessResponse {
        message: "Table deleted".into(),
    }))
}
