//! Capability and management queries (spec section 4): `GET /me`, a task's
//! adoption history (`GET /tasks/{id}/bindings`) and a room's binding history
//! (`GET /chatrooms/{cid}/bindings`). Management lists return at most 2000 rows with
//! a `truncated` flag; capability id lists at most 5000.

use crate::auth::Auth;
use crate::error::ApiResult;
use crate::extract::ApiQuery;
use crate::pagination::LifecycleFilter;
use crate::routes::sandbox::bindings::enablement::{BINDING_COLUMNS, BindingRow, managed_room};
use crate::routes::sandbox::bindings::views::{SandboxBindingListResponse, SandboxBindingResponse};
use crate::routes::sandbox::environments::access::manages_scope;
use crate::routes::sandbox::tasks::access::task;
use crate::state::AppState;
use axum::Json;
use axum::extract::{Path, State};
use domain::principal::{Principal, PrincipalType};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Most rows of a management list.
const LIST_CAP: i64 = 2000;
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

fn capped(mut ids: Vec<Uuid>) -> (Vec<Uuid>, bool) {
    let truncated = ids.len() as i64 > ID_CAP;
    ids.truncate(ID_CAP as usize);
    (ids, truncated)
}

/// The caller's capability hints.
#[utoipa::path(get, path = "/me", tag = "general",
    responses((status = 200, body = SandboxMeResponse)))]
async fn me(
    State(state): State<AppState>,
    Auth(principal): Auth,
) -> ApiResult<Json<SandboxMeResponse>> {
    let user = principal.principal_type == PrincipalType::User;
    let manager = principal.is_company_manager();
    let rooms: Vec<Uuid> = if manager {
        Vec::new()
    } else {
        sqlx::query_scalar(
            "SELECT r.id FROM chatrooms r
              WHERE r.company_id = $1 AND NOT r.archived AND $4 = 'user' AND (
                    EXISTS (SELECT 1 FROM chatroom_members m WHERE m.chatroom_id = r.id
                              AND m.member_kind = $4 AND m.member_id = $2 AND m.is_manager)
                 OR EXISTS (SELECT 1 FROM department_members d WHERE d.department_id = r.department_id
                              AND d.user_id = $2 AND d.is_manager))
              ORDER BY r.id LIMIT $3",
        )
        .bind(principal.company_id)
        .bind(principal.principal_id)
        .bind(ID_CAP + 1)
        .bind(principal.principal_type.as_str())
        .fetch_all(&state.pool)
        .await?
    };
    let departments: Vec<Uuid> = sqlx::query_scalar(
        "SELECT d.id FROM departments d
          WHERE d.company_id = $1 AND $4 AND ($5 OR EXISTS (SELECT 1 FROM department_members m
                 WHERE m.department_id = d.id AND m.user_id = $2 AND m.is_manager))
          ORDER BY d.id LIMIT $3",
    )
    .bind(principal.company_id)
    .bind(principal.principal_id)
    .bind(ID_CAP + 1)
    .bind(user)
    .bind(manager)
    .fetch_all(&state.pool)
    .await?;
    let (chatroom_ids, rooms_truncated) = capped(rooms);
    let (department_ids, departments_truncated) = capped(departments);
    let mut creatable = Vec::new();
    if manager {
        creatable.push(CreatableOwnerScope {
            owner_scope: "company",
            owner_ids: vec![principal.company_id],
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
        company_id: principal.company_id,
        principal_type: principal.principal_type.as_str(),
        principal_id: principal.principal_id,
        auth_method: principal.auth_method.as_str(),
        role: principal.role,
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
    pub lifecycle: Option<LifecycleFilter>,
}

async fn bindings_where(
    state: &AppState,
    condition: &str,
    id: Uuid,
    lifecycle: LifecycleFilter,
    rooms: Option<&[Uuid]>,
) -> ApiResult<Json<SandboxBindingListResponse>> {
    let rows: Vec<BindingRow> = sqlx::query_as(&format!(
        "SELECT {BINDING_COLUMNS} FROM bindings b
          WHERE {condition} = $1 AND ($2 OR (b.state = 'enabled') = $3)
            AND ($4::uuid[] IS NULL OR b.chatroom_id = ANY($4))
          ORDER BY b.created_at DESC, b.id DESC
          LIMIT $5"
    ))
    .bind(id)
    .bind(lifecycle == LifecycleFilter::All)
    .bind(lifecycle == LifecycleFilter::Active)
    .bind(rooms)
    .bind(LIST_CAP + 1)
    .fetch_all(&state.pool)
    .await?;
    let truncated = rows.len() as i64 > LIST_CAP;
    let items: Vec<SandboxBindingResponse> = rows
        .into_iter()
        .take(LIST_CAP as usize)
        .map(Into::into)
        .collect();
    Ok(Json(SandboxBindingListResponse { items, truncated }))
}

/// The live rooms holding bindings of `task` that the caller manages (as the room's
/// or its department's manager; company managers own every task and never get here).
async fn managed_rooms(
    state: &AppState,
    principal: &Principal,
    task: Uuid,
) -> ApiResult<Vec<Uuid>> {
    Ok(sqlx::query_scalar(
        "SELECT r.id FROM chatrooms r
          WHERE r.company_id = $2 AND NOT r.archived AND $4 = 'user'
            AND r.id IN (SELECT chatroom_id FROM bindings WHERE task_id = $1)
            AND (EXISTS (SELECT 1 FROM chatroom_members m WHERE m.chatroom_id = r.id
                           AND m.member_kind = $4 AND m.member_id = $3 AND m.is_manager)
              OR EXISTS (SELECT 1 FROM department_members d WHERE d.department_id = r.department_id
                           AND d.user_id = $3 AND d.is_manager))",
    )
    .bind(task)
    .bind(principal.company_id)
    .bind(principal.principal_id)
    .bind(principal.principal_type.as_str())
    .fetch_all(&state.pool)
    .await?)
}

/// A task's adoption history: its owners see every room, anyone else only the rooms
/// it manages.
#[utoipa::path(get, path = "/tasks/{task_id}/bindings", tag = "bindings",
    params(("task_id" = Uuid, Path), BindingListQuery),
    responses((status = 200, body = SandboxBindingListResponse), (status = 404, description = "not found")))]
async fn task_bindings(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(task_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<BindingListQuery>,
) -> ApiResult<Json<SandboxBindingListResponse>> {
    let access = task(&state, &principal, task_id).await?;
    let owner = manages_scope(
        &state,
        &principal,
        &access.row.owner_scope,
        Some(access.row.owner_id),
    )
    .await?;
    let rooms = if owner {
        None
    } else {
        Some(managed_rooms(&state, &principal, task_id).await?)
    };
    let lifecycle = query.lifecycle.unwrap_or_default();
    bindings_where(&state, "b.task_id", task_id, lifecycle, rooms.as_deref()).await
}

/// A room's binding history (room managers).
#[utoipa::path(get, path = "/chatrooms/{chatroom_id}/bindings", tag = "bindings",
    params(("chatroom_id" = Uuid, Path), BindingListQuery),
    responses((status = 200, body = SandboxBindingListResponse),
              (status = 403, description = "not a manager of the room"), (status = 404, description = "room not visible")))]
async fn room_bindings(
    State(state): State<AppState>,
    Auth(principal): Auth,
    Path(chatroom_id): Path<Uuid>,
    ApiQuery(query): ApiQuery<BindingListQuery>,
) -> ApiResult<Json<SandboxBindingListResponse>> {
    let room = managed_room(&state, &principal, chatroom_id).await?;
    let lifecycle = query.lifecycle.unwrap_or_default();
    bindings_where(&state, "b.chatroom_id", room.id, lifecycle, None).await
}
