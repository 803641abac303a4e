//! Capability and management queries (spec section 4): `GET /me`, a task's
//! adoption history (`GET /tasks/{id}/bindings`) and a room's binding history
//! (`GET /chatrooms/{cid}/bindings`). Management lists return at most 2000 rows with
//! a `truncated` flag; capability id lists at most 5000.

use crate::access::{Room, Task};
use crate::error::ApiResult;
use crate::extract::ApiPath;
use crate::extract::ApiQuery;
use crate::openapi::enums::LifecycleNames;
use crate::pagination::{LifecycleFilter, MANAGEMENT_LIST_CAP, capped};
use crate::request::Caller;
use crate::routes::sandbox::bindings::resolved;
use crate::routes::sandbox::bindings::views::SandboxBindingListResponse;
use crate::state::AppState;
use axum::Json;
use projections::read_models::directory::query as directory;
use projections::read_models::sharing::query::{self as sharing, BindingRow, BindingsOf};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Most rows of a management list.
/// Most ids of a capability id list.
const ID_CAP: i64 = 5000;

/// The management routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(me))
        .routes(routes!(task_bindings))
        .routes(routes!(room_bindings))
}

/// Rooms the caller manages.
#[derive(Debug, Serialize, ToSchema)]
pub struct ManageableChatroomScope {
    /// `company` (every current and future room; `chatroom_ids` is empty) or
    /// `chatroom` (exactly the rooms listed).
    pub scope: &'static str,
    /// The rooms, at most 5000.
    pub chatroom_ids: Vec<Uuid>,
    /// Whether more rooms exist than listed.
    pub truncated: bool,
}

/// An owner scope the caller may create tasks and environments in.
#[derive(Debug, Serialize, ToSchema)]
pub struct CreatableOwnerScope {
    /// `company` or `department`.
    pub owner_scope: &'static str,
    /// The owner ids, at most 5000.
    pub owner_ids: Vec<Uuid>,
    /// Whether more exist than listed.
    pub truncated: bool,
}

/// `GET /me`: capability hints; they grant nothing.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxMeResponse {
    /// The company.
    pub company_id: Uuid,
    /// `user` or `social_media_client`.
    pub principal_type: &'static str,
    /// The principal.
    pub principal_id: Uuid,
    /// `jwt` or `api_key`.
    pub auth_method: &'static str,
    /// The user's role.
    pub role: i32,
    /// Whether the caller is a company manager.
    pub is_company_manager: bool,
    /// Rooms the caller may enable jobs in.
    pub manageable_chatroom_scope: ManageableChatroomScope,
    /// Where the caller may create tasks and environments.
    pub creatable_owner_scopes: Vec<CreatableOwnerScope>,
}

fn capped_ids(mut ids: Vec<Uuid>) -> (Vec<Uuid>, bool) {
    let truncated = ids.len() as i64 > ID_CAP;
    ids.truncate(ID_CAP as usize);
    (ids, truncated)
}

/// The caller's capability hints.
#[utoipa::path(get, path = "/me", tag = "general",
    responses((status = 200, body = SandboxMeResponse)))]
async fn me(caller: Caller) -> ApiResult<Json<SandboxMeResponse>> {
    let manager = caller.principal.is_company_manager();
    let rooms = if manager {
        Vec::new()
    } else {
        directory::managed_room_ids(caller.pool(), &caller.principal, ID_CAP + 1).await?
    };
    let departments =
        directory::manageable_department_ids(caller.pool(), &caller.principal, ID_CAP + 1).await?;
    let (chatroom_ids, rooms_truncated) = capped_ids(rooms);
    let (department_ids, departments_truncated) = capped_ids(departments);
    let mut creatable = Vec::new();
    if manager {
        creatable.push(CreatableOwnerScope {
            owner_scope: "company",
            owner_ids: vec![caller.principal.company_id],
            truncated: false,
        });
    }
    if !department_ids.is_empty() {
        creatable.push(CreatableOwnerScope {
            owner_scope: "department",
            owner_ids: department_ids,
            truncated: departments_truncated,
        });
    }
    Ok(Json(SandboxMeResponse {
        company_id: caller.principal.company_id,
        principal_type: caller.principal.principal_type.as_str(),
        principal_id: caller.principal.principal_id,
        auth_method: caller.principal.auth_method.as_str(),
        role: caller.principal.role,
        is_company_manager: manager,
        manageable_chatroom_scope: ManageableChatroomScope {
            scope: if manager { "company" } else { "chatroom" },
            chatroom_ids,
            truncated: rooms_truncated,
        },
        creatable_owner_scopes: creatable,
    }))
}

/// `lifecycle` of binding lists.
#[derive(Debug, Default, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct BindingListQuery {
    /// `active` (default), `retired` or `all`.
    #[param(value_type = Option<LifecycleNames>, inline)]
    pub lifecycle: Option<LifecycleFilter>,
}

/// A capped management list of bindings.
async fn binding_list(
    state: &AppState,
    company: Uuid,
    of: BindingsOf<'_>,
    lifecycle: LifecycleFilter,
) -> ApiResult<Json<SandboxBindingListResponse>> {
    let rows = sharing::bindings(&state.pool, of, lifecycle, MANAGEMENT_LIST_CAP + 1).await?;
    let (rows, truncated) = capped::<BindingRow, BindingRow>(rows, |_| true);
    let items = resolved::responses(&state.pool, company, rows).await?;
    Ok(Json(SandboxBindingListResponse { items, truncated }))
}

/// A task's adoption history: its owners see every room, anyone else only the rooms
/// it manages.
#[utoipa::path(get, path = "/tasks/{task_id}/bindings", tag = "bindings",
    params(("task_id" = Uuid, Path), BindingListQuery),
    responses((status = 200, body = SandboxBindingListResponse)))]
async fn task_bindings(
    caller: Caller,
    ApiPath(task_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<BindingListQuery>,
) -> ApiResult<Json<SandboxBindingListResponse>> {
    let task = Task::read(&caller, task_id).await?;
    let rooms = if task.owner() {
        None
    } else {
        Some(directory::managed_rooms_binding(caller.pool(), &caller.principal, task_id).await?)
    };
    let lifecycle = query.lifecycle.unwrap_or_default();
    binding_list(
        &caller.state,
        caller.principal.company_id,
        BindingsOf::Task(task_id, rooms.as_deref()),
        lifecycle,
    )
    .await
}

/// A room's binding history (room managers).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/bindings", tag = "bindings",
    params(("chatroom_id" = Uuid, Path), BindingListQuery),
    responses((status = 200, body = SandboxBindingListResponse)))]
async fn room_bindings(
    caller: Caller,
    ApiPath(chatroom_id): ApiPath<Uuid>,
    ApiQuery(query): ApiQuery<BindingListQuery>,
) -> ApiResult<Json<SandboxBindingListResponse>> {
    let room = Room::managed(&caller, chatroom_id).await?;
    let lifecycle = query.lifecycle.unwrap_or_default();
    binding_list(
        &caller.state,
        caller.principal.company_id,
        BindingsOf::Room(room.id),
        lifecycle,
    )
    .await
}
