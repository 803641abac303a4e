//! Cross-scope sharing (spec section 4, "Cross-scope sharing routes"), always on the
//! table's owning scope: a chatroom table lets a department in, a department table
//! lets a chatroom (and its audience) in, and a room discovers the department tables
//! shared with it. Sharing adds a grant; it never moves or copies a table.

use super::columns::SuccessResponse;
use super::gates::{self, Operation, Standing};
use super::grant_body::{GrantBody, GrantResponse, SubjectGrant};
use super::records::window;
use super::scope::{Mount, enter_scope, scope_facts};
use super::table::{Listed, TableListResponse, TablePage, present};
use crate::error::ApiResult;
use crate::extract::{ApiJson, ApiQuery};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
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

/// The read, set and revoke routes of one cross-scope subject's grant; every one is
/// a [`SubjectGrant`] call.
macro_rules! cross_scope_grant_routes {
    ($get:ident, $put:ident, $delete:ident, $path:literal, $table:literal, $subject:literal,
     $reader:literal) => {
        #[doc = concat!("The grant that lets ", $reader, " access this ", $table, " table.")]
        #[utoipa::path(get, path = $path, tag = "custom_tables",
            params(("table_id" = Uuid, Path, description = "The table"), ($subject = Uuid, Path)),
            responses((status = 200, body = GrantResponse), (status = 403, description = "Insufficient permissions."),
                      (status = 404, description = "Not found")))]
        async fn $get(grant: SubjectGrant) -> ApiResult<Json<GrantResponse>> {
            grant.read()
        }

        #[doc = concat!("Lets ", $reader, " access this ", $table, " table.")]
        #[utoipa::path(put, path = $path, tag = "custom_tables", request_body = GrantBody,
            params(("table_id" = Uuid, Path, description = "The table"), ($subject = Uuid, Path)),
            responses((status = 200, body = GrantResponse), (status = 400, description = "Invalid row policy, column or scope values"),
                      (status = 403, description = "Insufficient permissions."), (status = 404, description = "Not found")))]
        async fn $put(
            grant: SubjectGrant,
            ApiJson(body): ApiJson<GrantBody>,
        ) -> ApiResult<Json<GrantResponse>> {
            grant.set(body.into()).await
        }

        #[doc = concat!("Ends the access of ", $reader, " to this ", $table, " table.")]
        #[utoipa::path(delete, path = $path, tag = "custom_tables",
            params(("table_id" = Uuid, Path, description = "The table"), ($subject = Uuid, Path)),
            responses((status = 200, body = SuccessResponse), (status = 403, description = "Insufficient permissions."),
                      (status = 404, description = "Not found")))]
        async fn $delete(grant: SubjectGrant) -> ApiResult<Json<SuccessResponse>> {
            grant.revoke().await
        }
    };
}

cross_scope_grant_routes!(
    get_department_permission,
    put_department_permission,
    delete_department_permission,
    "/tables/{table_id}/department-permissions/{department_id}",
    "chatroom",
    "department_id",
    "a department's members"
);
cross_scope_grant_routes!(
    get_chatroom_permission,
    put_chatroom_permission,
    delete_chatroom_permission,
    "/tables/{table_id}/chatroom-permissions/{chatroom_id}",
    "department",
    "chatroom_id",
    "a chatroom's members (an internal grant, with the `scope_values` of the table's channel policy)"
);

/// Department tables granted to this chatroom, as the caller sees them (its own
/// `record_count`, hidden columns absent); read them through the department mount.
#[utoipa::path(get, path = "/tables/shared", tag = "custom_tables", params(TablePage),
    responses((status = 200, body = TableListResponse)))]
async fn shared_tables(
    caller: Caller,
    mount: Mount,
    ApiQuery(page): ApiQuery<TablePage>,
) -> ApiResult<Json<TableListResponse>> {
    let (skip, limit) = window(page.skip, page.limit, "query")?;
    let (room, _) = enter_scope(&caller, &mount, Operation::ListOrCreateTables).await?;
    // Every table shared with the room, so the page and its total count only the
    // tables this caller can open (a room rarely holds more than a few hundred).
    let rows =
        tables::shared_with_room(caller.pool(), caller.principal.company_id, room.id).await?;
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
                let s = scope_facts(&caller, department)
                    .await?
                    .map(|f| f.standing)
                    .unwrap_or_default();
                standings.insert(row.scope_id, s);
                s
            }
        };
        let standing = Standing {
            table_creator: row.created_by == caller.principal.reference(),
            ..base
        };
        listed.push(Listed {
            manager: gates::moderator(ScopeKind::Department, &standing),
            scope_entry: gates::entry(ScopeKind::Department, &standing),
            row,
        });
    }
    let window = Some((skip as usize, limit as usize));
    let (tables, total) = present(&caller, listed, window).await?;
    Ok(Json(TableListResponse {
        tables,
        total: total as i64,
    }))
}
