//! Record routes: `GET/POST .../tables/{table_id}/records` and
//! `GET/PUT/DELETE .../records/{record_id}`.

use super::access::Floor;
use super::cells::{self, RecordResponse};
use super::columns::SuccessResponse;
use super::gates::Operation;
use super::scope::{Mount, OpenTable, open_table};
use super::selection::{SortSpec, sort_keys};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::http::StatusCode;
use domain::error::Code;
use domain::principal::PrincipalType;
use domain::tables::TableError;
use domain::tables::query::{Condition, Field, Op};
use domain::tables::record::{Cells, Record, RecordCommand};
use domain::validation::ViolationKind;
use projections::read_models::tables::read::Selection;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Record routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_records, create_record))
        .routes(routes!(get_record, put_record, delete_record))
}

/// Largest page.
pub const MAX_LIMIT: i64 = 100;

/// A record write: cells by display name or internal key.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RecordWrite {
    /// Cells; on PUT only the named cells change (`null` empties one).
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
}

/// A page of records.
#[derive(Debug, Serialize, ToSchema)]
pub struct RecordListResponse {
    /// The records.
    pub records: Vec<RecordResponse>,
    /// Records matching, before paging.
    pub total: i64,
}

/// Query of the record list.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct ListQuery {
    /// Rows to skip (at least 0).
    pub skip: Option<i64>,
    /// Rows to return, 1..100 (default 50).
    pub limit: Option<i64>,
    /// Internal key or display name of a sortable column, or `id`, `created_at`,
    /// `updated_at`.
    pub sort_by: Option<String>,
    /// `asc` or `desc`.
    #[param(schema_with = crate::openapi::shapes::sort_order)]
    pub sort_order: Option<String>,
}

/// Checks `skip` and `limit`.
pub fn window(skip: Option<i64>, limit: Option<i64>, loc: &str) -> ApiResult<(i64, i64)> {
    let skip = skip.unwrap_or(0);
    let limit = limit.unwrap_or(50);
    if skip < 0 {
        return Err(ApiError::invalid(
            &[loc, "skip"],
            ViolationKind::GreaterThanEqual(0),
            Some(skip.into()),
        ));
    }
    if !(1..=MAX_LIMIT).contains(&limit) {
        let kind = if limit < 1 {
            ViolationKind::GreaterThanEqual(1)
        } else {
            ViolationKind::LessThanEqual(MAX_LIMIT)
        };
        return Err(ApiError::invalid(&[loc, "limit"], kind, Some(limit.into())));
    }
    Ok((skip, limit))
}

/// A page and its total.
pub async fn page(
    state: &AppState,
    table: &OpenTable,
    selection: &Selection,
) -> ApiResult<RecordListResponse> {
    let handle = table.handle();
    // The page and the total are independent reads: run them on two connections.
    let (rows, total) = tokio::try_join!(
        handle.page(&state.pool, selection),
        handle.count(&state.pool, selection)
    )
    .map_err(ApiError::Internal)?;
    Ok(RecordListResponse {
        records: cells::render(state, table, rows).await?,
        total,
    })
}

/// Records of the table, one page.
#[utoipa::path(get, path = "/tables/{table_id}/records", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ListQuery),
    responses((status = 200, body = RecordListResponse)))]
async fn list_records(
    caller: Caller,
    mount: Mount,
    ApiQuery(query): ApiQuery<ListQuery>,
) -> ApiResult<Json<RecordListResponse>> {
    let (skip, limit) = window(query.skip, query.limit, "query")?;
    let table = open_table(&caller, &mount, Operation::ReadRows).await?;
    let sort = match query.sort_by {
        Some(column) => sort_keys(
            &table,
            &[SortSpec {
                column,
                order: query.sort_order,
            }],
        )?,
        None => Vec::new(),
    };
    let selection = Selection {
        sort,
        limit: Some(limit),
        offset: skip,
        ..table.selection()
    };
    Ok(Json(page(&caller.state, &table, &selection).await?))
}

/// One record by id among the rows the caller sees.
async fn read_one(
    state: &AppState,
    table: &OpenTable,
    record_id: Uuid,
) -> ApiResult<RecordResponse> {
    read_by_id(state, table, record_id, table.selection()).await
}

/// A record the caller just wrote, even when its grant does not read it back
/// (hidden columns stay absent).
pub async fn read_written(
    state: &AppState,
    table: &OpenTable,
    record_id: Uuid,
) -> ApiResult<RecordResponse> {
    let selection = Selection {
        access: None,
        ..table.selection()
    };
    read_by_id(state, table, record_id, selection).await
}

async fn read_by_id(
    state: &AppState,
    table: &OpenTable,
    record_id: Uuid,
    base: Selection,
) -> ApiResult<RecordResponse> {
    let selection = Selection {
        condition: Some(Condition::Test {
            field: Field::Id,
            op: Op::Eq,
            operands: vec![Value::String(record_id.to_string())],
        }),
        limit: Some(1),
        ..base
    };
    let rows = table
        .handle()
        .page(&state.pool, &selection)
        .await
        .map_err(ApiError::Internal)?;
    cells::render(state, table, rows)
        .await?
        .pop()
        .ok_or(ApiError::NotFound)
}

/// The channel floor of writes: a caller with no eligible room writes nothing, a
/// new record must hold one of the caller's scope values in the scope column, and an
/// update may not move it elsewhere (403 `scp_scope_undeclared`).
fn within_floor(table: &OpenTable, write: Option<(&Cells, bool)>) -> ApiResult<()> {
    let refused = ApiError::Refused(Code::ScpScopeUndeclared);
    match (&table.access.floor, write) {
        (Floor::NoRoom, _) => Err(refused),
        (Floor::Rooms { column, values, .. }, Some((cells, creating))) => {
            match cells.get(column) {
                Some(cell) if values.contains(cell) => Ok(()),
                // An update that leaves the scope cell alone stays where it was.
                None if !creating => Ok(()),
                _ => Err(refused),
            }
        }
        _ => Ok(()),
    }
}

/// Raw agent writes (a social media client's, not through a Command) of a table
/// whose settings say `agent_writes_via_commands_only` are refused (spec 5.8.4).
fn raw_write_allowed(table: &OpenTable) -> ApiResult<()> {
    let agent = table.caller.principal.principal_type == PrincipalType::SocialMediaClient;
    if agent && !table.through_command && table.row.agent_writes_via_commands_only {
        return Err(ApiError::code(
            Code::TableGovernedByCommands,
            "this table takes agent writes through its Commands only",
        ));
    }
    Ok(())
}

/// Refuses record writes while a background migration rewrites the table.
fn unlocked(table: &OpenTable) -> ApiResult<()> {
    match table.row.migration_id {
        Some(id) => Err(ApiError::from(TableError::MigrationInProgress(id))),
        None => Ok(()),
    }
}

/// Creates a record; every value is checked against its column.
#[utoipa::path(post, path = "/tables/{table_id}/records", tag = "custom_tables", request_body = RecordWrite,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 201, body = RecordResponse)))]
async fn create_record(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<RecordWrite>,
) -> ApiResult<(StatusCode, Json<RecordResponse>)> {
    let table = open_table(&caller, &mount, Operation::InsertRows).await?;
    let record_id = Uuid::new_v4();
    insert(&table, record_id, &body.data).await?;
    Ok((
        StatusCode::CREATED,
        Json(read_written(&caller.state, &table, record_id).await?),
    ))
}

/// Creates record `record_id` as the table's caller: the channel floor, the
/// migration lock and every value checked against its column. The one creation
/// path of REST writes and callback writes.
pub async fn insert(
    table: &OpenTable,
    record_id: Uuid,
    data: &Map<String, Value>,
) -> ApiResult<()> {
    let command = creation(table, record_id, data).await?;
    let caller = &table.caller;
    caller.command::<Record>(record_id, command).await?;
    Ok(())
}

/// The command that creates record `record_id` as the table's caller, once the
/// channel floor, the migration lock and every value were checked (an import
/// decides many and appends them together).
pub async fn creation(
    table: &OpenTable,
    record_id: Uuid,
    data: &Map<String, Value>,
) -> ApiResult<RecordCommand> {
    within_floor(table, None)?;
    raw_write_allowed(table)?;
    unlocked(table)?;
    let caller = &table.caller;
    let data = cells::validate(&caller.state, table, data, true).await?;
    within_floor(table, Some((&data, true)))?;
    Ok(RecordCommand::Create {
        record_id,
        table_id: table.row.id,
        company_id: table.row.company_id,
        created_by: caller.principal.reference(),
        data,
    })
}

/// Changes the named cells of record `record_id` as the table's caller, who must
/// be able to edit it. The one update path of REST writes and callback writes.
pub async fn change(
    table: &OpenTable,
    record_id: Uuid,
    data: &Map<String, Value>,
) -> ApiResult<()> {
    let command = changing(table, record_id, data).await?;
    table.caller.command::<Record>(record_id, command).await?;
    Ok(())
}

/// The command that changes the named cells of record `record_id` as the table's
/// caller, once the channel floor, the caller's right to edit the record, the
/// migration lock and every value were checked.
pub async fn changing(
    table: &OpenTable,
    record_id: Uuid,
    data: &Map<String, Value>,
) -> ApiResult<RecordCommand> {
    within_floor(table, None)?;
    raw_write_allowed(table)?;
    let caller = &table.caller;
    editable(&caller.state, table, record_id).await?;
    unlocked(table)?;
    let changes = cells::validate(&caller.state, table, data, false).await?;
    within_floor(table, Some((&changes, false)))?;
    Ok(RecordCommand::Update {
        table_id: table.row.id,
        changes,
    })
}

/// One record.
#[utoipa::path(get, path = "/tables/{table_id}/records/{record_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("record_id" = Uuid, Path, description = "The record")),
    responses((status = 200, body = RecordResponse)))]
async fn get_record(caller: Caller, mount: Mount) -> ApiResult<Json<RecordResponse>> {
    let table = open_table(&caller, &mount, Operation::ReadRows).await?;
    Ok(Json(
        read_one(&caller.state, &table, mount.uuid("record_id")?).await?,
    ))
}

/// The record, for a change by a caller who may edit it.
async fn editable(
    state: &AppState,
    table: &OpenTable,
    record_id: Uuid,
) -> ApiResult<RecordResponse> {
    let record = read_one(state, table, record_id).await?;
    if !record.can_edit {
        return Err(ApiError::Forbidden(crate::access::INSUFFICIENT));
    }
    Ok(record)
}

/// Changes the named cells of a record.
#[utoipa::path(put, path = "/tables/{table_id}/records/{record_id}", tag = "custom_tables", request_body = RecordWrite,
    params(("table_id" = Uuid, Path, description = "The table"), ("record_id" = Uuid, Path, description = "The record")),
    responses((status = 200, body = RecordResponse)))]
async fn put_record(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<RecordWrite>,
) -> ApiResult<Json<RecordResponse>> {
    let table = open_table(&caller, &mount, Operation::EditRows).await?;
    let record_id = mount.uuid("record_id")?;
    change(&table, record_id, &body.data).await?;
    Ok(Json(read_written(&caller.state, &table, record_id).await?))
}

/// Deletes a record.
#[utoipa::path(delete, path = "/tables/{table_id}/records/{record_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The table"), ("record_id" = Uuid, Path, description = "The record")),
    responses((status = 200, body = SuccessResponse)))]
async fn delete_record(caller: Caller, mount: Mount) -> ApiResult<Json<SuccessResponse>> {
    let table = open_table(&caller, &mount, Operation::EditRows).await?;
    within_floor(&table, None)?;
    raw_write_allowed(&table)?;
    let record_id = mount.uuid("record_id")?;
    editable(&caller.state, &table, record_id).await?;
    let command = RecordCommand::Delete {
        table_id: table.row.id,
    };
    caller.command::<Record>(record_id, command).await?;
    Ok(Json(SuccessResponse {
        message: "Record deleted".into(),
    }))
}
