//! Cross-scope sharing (spec section 4, "Cross-scope sharing routes"), always on the
//! table's owning scope: a chatroom table lets a department in, a department table
//! lets a chatroom (and its audience) in, and a room discovers the department tables
//! shared with it. Sharing adds a grant; it never moves or copies a table.

use super::columns::SuccessResponse;
use super::gates::{self, Operation, Standing};
use super::grant_body::{self, GrantBody, GrantResponse};
use super::records::window;
use super::scope::{Mount, OpenTable, enter_scope, open_table, scope_facts};
use super::table::{Listed, TableListResponse, TablePage, present};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiQuery};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::principal::Principal;
use domain::tables::grants::Subject;
use domain::tables::scope::{ScopeKind, ScopeRef};
use projections::read_models::tables::query as tables;
use std::collections::HashMap;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Routes of the chatroom mount.
pub fn chatroom_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(shared_tables))
        .routes(routes!(
            get_department_permission,
            put_department_permission,
            delete_department_permission
        ))
}

/// Routes of the department mount.
pub fn department_router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(
        get_chatroom_permission,
        put_chatroom_permission,
        delete_chatroom_permission
    ))
}

fn department_subject(mount: &Mount) -> ApiResult<Subject> {
    Ok(Subject::Department(mount.uuid("department_id")?))
}

fn chatroom_subject(mount: &Mount) -> ApiResult<Subject> {
    Ok(Subject::Chatroom(mount.uuid("chatroom_id")?))
}

/// The table of a cross-scope route, opened for its managers.
async fn managed(state: &AppState, principal: &Principal, mount: &Mount) -> ApiResult<OpenTable> {
    open_table(state, principal, mount, Operation::ManageTable).await
}

fn read_grant(table: &OpenTable, subject: Subject) -> ApiResult<Json<GrantResponse>> {
    table
        .grant(subject)
        .map(|g| Json(GrantResponse::of(subject, g)))
        .ok_or(ApiError::NotFound)
}

/// The grant that lets a department access this chatroom table.
#[utoipa::path(get, path = "/tables/{table_id}/department-permissions/{department_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The chatroom table"), ("department_id" = Uuid, Path, description = "The department")),
    responses((status = 200, body = GrantResponse), (status = 403, description = "Insufficient permissions."),
              (status = 404, description = "Not found")))]
async fn get_department_permission(
    Caller {
        state, principal, ..
    }: Caller,
    mount: Mount,
) -> ApiResult<Json<GrantResponse>> {
    let table = managed(&state, &principal, &mount).await?;
    read_grant(&table, department_subject(&mount)?)
}

/// Lets a department's members access this chatroom table.
#[utoipa::path(put, path = "/tables/{table_id}/department-permissions/{department_id}", tag = "custom_tables",
    request_body = GrantBody,
    params(("table_id" = Uuid, Path, description = "The chatroom table"), ("department_id" = Uuid, Path, description = "The department")),
    responses((status = 200, body = GrantResponse), (status = 400, description = "Invalid row policy or column"),
              (status = 403, description = "Insufficient permissions."), (status = 404, description = "Not found")))]
async fn put_department_permission(
    Caller {
        state,
        ctx,
        principal,
    }: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<GrantBody>,
) -> ApiResult<Json<GrantResponse>> {
    let table = managed(&state, &principal, &mount).await?;
    let subject = department_subject(&mount)?;
    Ok(Json(
        grant_body::set(&state, &ctx, &table, subject, body.into()).await?,
    ))
}

/// Ends a department's access to this chatroom table.
#[utoipa::path(delete, path = "/tables/{table_id}/department-permissions/{department_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The chatroom table"), ("department_id" = Uuid, Path, description = "The department")),
    responses((status = 200, body = SuccessResponse), (status = 403, description = "Insufficient permissions."),
              (status = 404, description = "Not found")))]
async fn delete_department_permission(
    Caller {
        state,
        ctx,
        principal,
    }: Caller,
    mount: Mount,
) -> ApiResult<Json<SuccessResponse>> {
    let table = managed(&state, &principal, &mount).await?;
    grant_body::revoke(&state, &ctx, &table, department_subject(&mount)?).await?;
    Ok(Json(SuccessResponse {
        message: "Permission revoked".into(),
    }))
}

/// The internal grant of a chatroom on this department table.
#[utoipa::path(get, path = "/tables/{table_id}/chatroom-permissions/{chatroom_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The department table"), ("chatroom_id" = Uuid, Path, description = "The chatroom")),
    responses((status = 200, body = GrantResponse), (status = 403, description = "Insufficient permissions."),
              (status = 404, description = "Not found")))]
async fn get_chatroom_permission(
    Caller {
        state, principal, ..
    }: Caller,
    mount: Mount,
) -> ApiResult<Json<GrantResponse>> {
    let table = managed(&state, &principal, &mount).await?;
    read_grant(&table, chatroom_subject(&mount)?)
}

/// Lets a chatroom's members access this department table (an internal grant, with
/// the `scope_values` of the table's channel policy).
#[utoipa::path(put, path = "/tables/{table_id}/chatroom-permissions/{chatroom_id}", tag = "custom_tables",
    request_body = GrantBody,
    params(("table_id" = Uuid, Path, description = "The department table"), ("chatroom_id" = Uuid, Path, description = "The chatroom")),
    responses((status = 200, body = GrantResponse), (status = 400, description = "Invalid row policy, column or scope values"),
              (status = 403, description = "Insufficient permissions."), (status = 404, description = "Not found")))]
async fn put_chatroom_permission(
    Caller {
        state,
        ctx,
        principal,
    }: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<GrantBody>,
) -> ApiResult<Json<GrantResponse>> {
    let table = managed(&state, &principal, &mount).await?;
    let subject = chatroom_subject(&mount)?;
    Ok(Json(
        grant_body::set(&state, &ctx, &table, subject, body.into()).await?,
    ))
}

/// Ends a chatroom's access to this department table.
#[utoipa::path(delete, path = "/tables/{table_id}/chatroom-permissions/{chatroom_id}", tag = "custom_tables",
    params(("table_id" = Uuid, Path, description = "The department table"), ("chatroom_id" = Uuid, Path, description = "The chatroom")),
    responses((status = 200, body = SuccessResponse), (status = 403, description = "Insufficient permissions."),
              (status = 404, description = "Not found")))]
async fn delete_chatroom_permission(
    Caller {
        state,
        ctx,
        principal,
    }: Caller,
    mount: Mount,
) -> ApiResult<Json<SuccessResponse>> {
    let table = managed(&state, &principal, &mount).await?;
    grant_body::revoke(&state, &ctx, &table, chatroom_subject(&mount)?).await?;
    Ok(Json(SuccessResponse {
        message: "Permission revoked".into(),
    }))
}

/// Department tables granted to this chatroom, as the caller sees them (its own
/// `record_count`, hidden columns absent); read them through the department mount.
#[utoipa::path(get, path = "/tables/shared", tag = "custom_tables", params(TablePage),
    responses((status = 200, body = TableListResponse), (status = 404, description = "Not found")))]
async fn shared_tables(
    Caller {
        state, principal, ..
    }: Caller,
    mount: Mount,
    ApiQuery(page): ApiQuery<TablePage>,
) -> ApiResult<Json<TableListResponse>> {
    let (skip, limit) = window(page.skip, page.limit, "query")?;
    let (room, _) = enter_scope(&state, &principal, &mount, Operation::ListOrCreateTables).await?;
    // Every table shared with the room, so the page and its total count only the
    // tables this caller can open (a room rarely holds more than a few hundred).
    let rows = tables::shared_with_room(&state.pool, principal.company_id, room.id).await?;
    let mut standings: HashMap<Uuid, Standing> = HashMap::new();
    let mut listed = Vec::with_capacity(rows.len());
    for row in rows {
        let department = ScopeRef {
            kind: ScopeKind::Department,
            id: row.scope_id,
        };
        let base = match standings.get(&row.scope_id) {
            Some(s) => *s,
            None => {
                let s = scope_facts(&state, &principal, department)
                    .await?
                    .map(|f| f.standing)
                    .unwrap_or_default();
                standings.insert(row.scope_id, s);
                s
            }
        };
        let standing = Standing {
            table_creator: row.created_by == principal.reference(),
            ..base
        };
        listed.push(Listed {
            manager: gates::moderator(ScopeKind::Department, &standing),
            scope_entry: gates::entry(ScopeKind::Department, &standing),
            row,
        });
    }
    let window = Some((skip as usize, limit as usize));
    let (tables, total) = present(&state, &principal, listed, window).await?;
    Ok(Json(TableListResponse {
        tables,
        total: total as i64,
    }))
}
