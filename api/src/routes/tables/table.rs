//! Table routes: `GET/POST {scope_mount}/tables` and
//! `GET/PATCH/DELETE {scope_mount}/tables/{table_id}`.

use super::access;
use super::column_schema::ColumnResponse;
use super::columns::SuccessResponse;
use super::gates::Operation;
use super::gates::{self, Standing};
use super::scope::{Mount, OpenTable, TableRow, enter_scope, link_gates, open_table};
use crate::error::{ApiError, ApiResult};
use crate::extract::double_option;
use crate::extract::{ApiJson, ApiQuery};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::StatusCode;
use chrono::{DateTime, Utc};
use domain::tables::column::ColumnDef;
use domain::tables::table::{CustomTable, TableCommand};
use projections::read_models::tables::query as tables;
use projections::read_models::tables::read::{Selection, TableHandle};
use serde::{Deserialize, Serialize};
use sqlx::types::Json as SqlJson;
use std::collections::{HashMap, HashSet};
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
    #[schema(schema_with = crate::openapi::shapes::name_200)]
    pub name: String,
    /// Free text (at most 2000 characters).
    #[schema(max_length = 2000)]
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
    /// Department tables: the column (internal key or display name) whose values the
    /// rooms' `scope_values` reach; the table is then governed by a scoped channel
    /// policy. `null` ends it.
    #[serde(default, deserialize_with = "double_option")]
    pub channel_scope_column: Option<Option<String>>,
    /// Settings to change; a missing one keeps its value.
    pub settings: Option<TableSettings>,
}

/// A table's settings.
#[derive(Debug, Clone, Default, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct TableSettings {
    /// Raw agent writes (social media clients, and runs' writeback credentials) are
    /// refused with 403 `table_governed_by_commands`; agents write through Commands.
    pub agent_writes_via_commands_only: Option<bool>,
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
    /// Whether social media clients may reach the table through their grants.
    pub client_access: bool,
    /// The channel scope column of a department table governed by a channel
    /// policy (internal key), if any.
    pub channel_scope_column: Option<String>,
    /// The table's settings.
    pub settings: TableSettings,
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

/// Stored columns of several tables by table: definition, creation, last change.
type ColumnRows = HashMap<Uuid, Vec<(ColumnDef, DateTime<Utc>, DateTime<Utc>)>>;

/// A stored column row: its table, definition, creation and last change.
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
            .push((def.0, created, updated));
    }
    Ok(out)
}

/// A table of a page and where the caller stands with it.
pub struct Listed {
    /// The registry row.
    pub row: TableRow,
    /// The caller manages it.
    pub manager: bool,
    /// The caller enters its owning scope.
    pub scope_entry: bool,
}

/// A window of a list: rows to skip and to return.
pub type Window = (usize, usize);

/// Tables as this caller sees them: only those it can open (a grant or scope entry
/// decides, and client access lets a social media client in), then the window's,
/// each with the caller's `record_count` (counted for the whole window by one
/// query) and without hidden columns. Returns them and how many it could open.
/// Nothing here is cached across callers.
pub async fn present(
    caller: &Caller,
    tables: Vec<Listed>,
    window: Option<Window>,
) -> ApiResult<(Vec<TableResponse>, usize)> {
    let ids: Vec<Uuid> = tables.iter().map(|t| t.row.id).collect();
    let (mut columns, who, grants) = tokio::try_join!(
        columns_of(&caller.state, &ids),
        access::facts(&caller.state, &caller.principal),
        access::grants(&caller.state, &ids)
    )?;
    let inputs: Vec<(TableRow, Vec<ColumnDef>, bool, bool)> = tables
        .iter()
        .map(|t| {
            let defs = columns
                .get(&t.row.id)
                .map(|c| c.iter().map(|(d, ..)| d.clone()).collect())
                .unwrap_or_default();
            (t.row.clone(), defs, t.manager, t.scope_entry)
        })
        .collect();
    let access =
        access::page_access(&caller.state, &caller.principal, &who, &grants, &inputs).await?;
    let openable: Vec<(Listed, Vec<ColumnDef>)> = tables
        .into_iter()
        .zip(inputs.into_iter().map(|(_, defs, ..)| defs))
        .filter(|(t, _)| {
            let refused = who.refused_by(&t.row);
            !refused && access[&t.row.id].source.is_some()
        })
        .collect();
    let total = openable.len();
    let (skip, limit) = window.unwrap_or((0, total));
    let page: Vec<(Listed, Vec<ColumnDef>)> = openable.into_iter().skip(skip).take(limit).collect();
    let mut counted = Vec::new();
    for (t, defs) in &page {
        let a = &access[&t.row.id];
        if a.reads() && !a.sees_everything() {
            let handle = TableHandle {
                company_id: t.row.company_id,
                table_id: t.row.id,
                columns: defs.clone(),
                gates: Vec::new(),
            };
            let selection = Selection {
                access: Some(a.visible()),
                ..Default::default()
            };
            counted.push((handle, selection));
        }
    }
    let counts = TableHandle::count_each(caller.pool(), &counted)
        .await
        .map_err(ApiError::Internal)?;
    // The other tables the page's computed columns read, opened once each: a
    // column reading one the caller may not open answers `restricted`.
    let reading: Vec<ColumnDef> = page
        .iter()
        .flat_map(|(_, defs)| defs.iter())
        .filter(|d| !d.reads_tables().is_empty())
        .cloned()
        .collect();
    let readable: HashSet<Uuid> = link_gates(caller, &reading)
        .await?
        .into_iter()
        .map(|g| g.table_id)
        .collect();
    let mut counts: HashMap<Uuid, i64> = counted
        .iter()
        .map(|(h, _)| h.table_id)
        .zip(counts)
        .collect();
    let responses = page
        .into_iter()
        .map(|(t, _)| {
            let a = &access[&t.row.id];
            let record_count = match counts.remove(&t.row.id) {
                Some(n) => n,
                None if a.reads() => t.row.record_count,
                None => 0,
            };
            let all = columns.remove(&t.row.id).unwrap_or_default();
            let defs: Vec<ColumnDef> = all.iter().map(|(d, ..)| d.clone()).collect();
            let visible = all
                .iter()
                .filter(|(d, ..)| !a.hidden.contains(&d.key))
                .map(|(d, created, updated)| ColumnResponse {
                    restricted: d.reads_tables().iter().any(|t| !readable.contains(t)),
                    ..ColumnResponse::of(d, &defs, *created, *updated)
                })
                .collect();
            let mut row = t.row;
            row.channel_scope_column = row
                .channel_scope_column
                .filter(|key| !a.hidden.contains(key));
            respond(row, visible, record_count, t.manager)
        })
        .collect();
    Ok((responses, total))
}

fn respond(
    row: TableRow,
    columns: Vec<ColumnResponse>,
    record_count: i64,
    can_manage: bool,
) -> TableResponse {
    TableResponse {
        id: row.id,
        name: row.name,
        description: row.description,
        scope: ScopeResponse {
            kind: row.scope_kind.as_str().into(),
            id: row.scope_id,
        },
        created_by: row.created_by,
        created_at: row.created_at,
        updated_at: row.updated_at,
        record_count,
        columns,
        migration_id: row.migration_id,
        can_manage,
        client_access: row.client_access,
        channel_scope_column: row.channel_scope_column,
        settings: TableSettings {
            agent_writes_via_commands_only: Some(row.agent_writes_via_commands_only),
        },
    }
}

async fn detail(table: OpenTable) -> ApiResult<TableResponse> {
    let listed = Listed {
        manager: table.is_moderator(),
        scope_entry: gates::entry(table.scope.kind, &table.standing),
        row: table.row,
    };
    let (mut out, _) = present(&table.caller, vec![listed], None).await?;
    out.pop().ok_or(ApiError::NotFound)
}

/// The tables of the scope.
#[utoipa::path(get, path = "/tables", tag = "custom_tables", params(TablePage),
    responses((status = 200, body = TableListResponse)))]
async fn list_tables(
    caller: Caller,
    mount: Mount,
    ApiQuery(page): ApiQuery<TablePage>,
) -> ApiResult<Json<TableListResponse>> {
    let (skip, limit) = super::records::window(page.skip, page.limit, "query")?;
    let (scope, facts) = enter_scope(&caller, &mount, Operation::ListOrCreateTables).await?;
    // Every entrant of the scope holds at least the default grant; a social media
    // client does not see tables whose client access is off.
    let client =
        caller.principal.principal_type == domain::principal::PrincipalType::SocialMediaClient;
    let company = caller.principal.company_id;
    let rows = tables::scope_tables(caller.pool(), company, scope, client, skip, limit).await?;
    let total = tables::scope_table_count(caller.pool(), company, scope, client).await?;
    let listed = rows
        .into_iter()
        .map(|row| {
            let standing = Standing {
                table_creator: row.created_by == caller.principal.reference(),
                ..facts.standing
            };
            Listed {
                manager: gates::moderator(scope.kind, &standing),
                scope_entry: true,
                row,
            }
        })
        .collect();
    // The page was cut by the query: every entrant of the scope opens its tables.
    let (tables, _) = present(&caller, listed, None).await?;
    Ok(Json(TableListResponse { tables, total }))
}

/// Creates a table owned by the mount's scope.
#[utoipa::path(post, path = "/tables", tag = "custom_tables", request_body = TableCreate,
    responses((status = 201, body = TableResponse)))]
async fn create_table(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<TableCreate>,
) -> ApiResult<(StatusCode, Json<TableResponse>)> {
    let (scope, _) = enter_scope(&caller, &mount, Operation::ListOrCreateTables).await?;
    if caller.principal.principal_type != domain::principal::PrincipalType::User {
        return Err(ApiError::Forbidden(crate::access::INSUFFICIENT));
    }
    let table_id = Uuid::new_v4();
    let command = TableCommand::Create {
        table_id,
        company_id: caller.principal.company_id,
        scope,
        name: body.name,
        description: body.description,
        created_by: caller.principal.reference(),
    };
    caller.command::<CustomTable>(table_id, command).await?;
    let table =
        super::scope::open_table_id(&caller, &mount, table_id, Operation::ReadTable).await?;
    Ok((StatusCode::CREATED, Json(detail(table).await?)))
}

/// One table with its columns.
#[utoipa::path(get, path = "/tables/{table_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = TableResponse)))]
async fn get_table(caller: Caller, mount: Mount) -> ApiResult<Json<TableResponse>> {
    let table = open_table(&caller, &mount, Operation::ReadTable).await?;
    Ok(Json(detail(table).await?))
}

/// Renames a table, changes its description, channel scope column or settings
/// (table managers).
#[utoipa::path(patch, path = "/tables/{table_id}", tag = "custom_tables", request_body = TableUpdate,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = TableResponse)))]
async fn update_table(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<TableUpdate>,
) -> ApiResult<Json<TableResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let command = TableCommand::Update {
        name: body.name,
        description: body.description,
        channel_scope_column: body.channel_scope_column,
        agent_writes_via_commands_only: body
            .settings
            .and_then(|s| s.agent_writes_via_commands_only),
    };
    table.execute(command).await?;
    let table = open_table(&caller, &mount, Operation::ReadTable).await?;
    Ok(Json(detail(table).await?))
}

/// Deletes a table and all its records (table managers).
#[utoipa::path(delete, path = "/tables/{table_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = SuccessResponse)))]
async fn delete_table(caller: Caller, mount: Mount) -> ApiResult<Json<SuccessResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    table.execute(TableCommand::Delete).await?;
    Ok(Json(SuccessResponse {
        message: "Table deleted".into(),
    }))
}
