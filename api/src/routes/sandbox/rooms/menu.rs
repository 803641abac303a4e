//! `GET /chatrooms/{cid}/menu`: the tasks a room has granted and enabled, the same
//! list for every caller. It is one indexed range of the `bindings` read model,
//! never a scan of the company's tasks.

use crate::access::Room;
use crate::error::ApiResult;
use crate::extract::ApiPath;
use crate::extract::ApiQuery;
use crate::pagination::{Page, PageQuery};
use crate::request::Caller;
use crate::routes::sandbox::bindings::views::{
    SandboxMenuItem, SandboxMenuResponse, resolve_views, secret_slots,
};
use crate::routes::sandbox::tasks::preview::runtime_contract;
use crate::secrets::slots;
use crate::state::AppState;
use axum::Json;
use domain::sharing::binding::SlotAssignment;
use projections::read_models::sharing::query::{self as sharing, MenuRow};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The menu route.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(menu))
}

/// The warning a menu entry carries when its job reads secrets.
fn risk_warning(slots: &[SlotAssignment]) -> Option<String> {
    if slots.is_empty() {
        return None;
    }
    let names: Vec<&str> = slots.iter().map(|s| s.name.as_str()).collect();
    Some(format!(
        "This job reads the secrets {}; its scripts can use or reveal their values.",
        names.join(", ")
    ))
}

impl From<MenuRow> for SandboxMenuItem {
    fn from(row: MenuRow) -> Self {
        Self {
            task_id: row.task_id,
            task_name: row.task_name,
            task_version_id: row.task_version_id,
            task_version_digest: row.task_version_digest,
            input_schema: row.input_schema.map(|s| s.0),
            secret_use_risk_warning: risk_warning(&row.secret_slots),
            secret_slots: secret_slots(&row.secret_slots),
            runtime_contract: runtime_contract(None),
        }
    }
}

/// The room's menu: only granted and enabled tasks, by name.
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/menu", tag = "runs",
    params(("chatroom_id" = Uuid, Path), PageQuery),
    responses((status = 200, body = SandboxMenuResponse)))]
async fn menu(
    caller: Caller,
    ApiPath(chatroom_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<PageQuery>,
) -> ApiResult<Json<SandboxMenuResponse>> {
    let page = query.page(50)?;
    let room = Room::visible(&caller, chatroom_id).await?;
    Ok(Json(menu_page(&caller, &room, None, page).await?))
}

/// A page of a room's menu (tasks whose name contains `search`, when given), with
/// each entry's secret slots resolved for the room: the REST menu and the agent's
/// `sandbox_job_menu` read it.
pub async fn menu_page(
    caller: &Caller,
    room: &Room,
    search: Option<&str>,
    page: Page<Uuid>,
) -> ApiResult<SandboxMenuResponse> {
    let menu = async |w| sharing::menu(caller.pool(), room.id, search, w).await;
    // The cursor is the last task's id (the query reads its name): a name of up to
    // 256 characters in the token would pass the 512 a page_token may have.
    let listed = page.fetch(menu, |r| r.task_id).await?;
    let pins: Vec<_> = listed
        .items
        .iter()
        .map(|row| (row.task_id, row.secret_slots.0.clone()))
        .collect();
    let resolved = slots::resolve(caller.pool(), room.place(), &pins).await?;
    let mut response: SandboxMenuResponse = listed.into();
    for item in &mut response.items {
        resolve_views(&mut item.secret_slots, resolved.get(&item.task_id));
    }
    Ok(response)
}
