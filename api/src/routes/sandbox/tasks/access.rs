//! Who may see and change a task.
//!
//! Every member of the owning company may read a task and its published versions
//! (as a borrower); the owner scope's managers (a company manager for a
//! company-owned task, that department's manager or a company manager for a
//! department-owned one) own it: they see drafts and owner-only fields, and change
//! it. Anything else answers the uniform 404.

use super::views::{
    SandboxTaskResponse, VERSION_COLUMNS, VERSION_FROM, VersionRow, Viewer, version_view,
};
use crate::error::{ApiError, ApiResult};
use crate::routes::sandbox::environments::access::manages_scope;
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::principal::Principal;
use uuid::Uuid;

/// A task row as the routes read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct TaskRow {
    /// Id.
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// `company` or `department`.
    pub owner_scope: String,
    /// Owning company or department.
    pub owner_id: Uuid,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// Legacy flag.
    pub agent_enabled: bool,
    /// Quick Run parent.
    pub hidden: bool,
    /// `active` or `archived`.
    pub lifecycle: String,
    /// Versions so far.
    pub version_count: i64,
    /// Newest published version.
    pub latest_published_version_id: Option<Uuid>,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Changed.
    pub updated_at: DateTime<Utc>,
}

/// The columns of [`TaskRow`] (over `tasks t`).
pub const TASK_COLUMNS: &str = "t.id, t.company_id, t.owner_scope, t.owner_id, t.name, t.description, \
     t.agent_enabled, t.hidden, t.lifecycle, t.version_count, \
     (SELECT v.id FROM task_versions v WHERE v.task_id = t.id AND v.state = 'published' \
       ORDER BY v.version_number DESC LIMIT 1) AS latest_published_version_id, \
     t.created_at, t.updated_at";

impl From<TaskRow> for SandboxTaskResponse {
    fn from(row: TaskRow) -> Self {
        Self {
            id: row.id,
            owner_scope: row.owner_scope,
            owner_id: row.owner_id,
            name: row.name,
            description: row.description,
            agent_enabled: row.agent_enabled,
            lifecycle: row.lifecycle,
            version_count: row.version_count,
            latest_published_version_id: row.latest_published_version_id,
            created_at: row.created_at,
            updated_at: row.updated_at,
        }
    }
}

/// A task the caller can see, and how.
#[derive(Debug, Clone)]
pub struct TaskAccess {
    /// The task.
    pub row: TaskRow,
    /// Owner or borrower.
    pub viewer: Viewer,
}

impl TaskAccess {
    /// Refuses (404) unless the caller owns the task.
    pub fn require_owner(&self) -> ApiResult<()> {
        match self.viewer {
            Viewer::Owner => Ok(()),
            Viewer::Borrower => Err(ApiError::NotFound),
        }
    }
}

/// Loads a task of the caller's company.
pub async fn task(state: &AppState, principal: &Principal, id: Uuid) -> ApiResult<TaskAccess> {
    let row: Option<TaskRow> = sqlx::query_as(&format!(
        "SELECT {TASK_COLUMNS} FROM tasks t WHERE t.id = $1 AND t.company_id = $2"
    ))
    .bind(id)
    .bind(principal.company_id)
    .fetch_optional(&state.pool)
    .await?;
    let row = row.ok_or(ApiError::NotFound)?;
    let viewer = if manages_scope(state, principal, &row.owner_scope, Some(row.owner_id)).await? {
        Viewer::Owner
    } else {
        Viewer::Borrower
    };
    Ok(TaskAccess { row, viewer })
}

/// Loads a task the caller owns (404 otherwise).
pub async fn owned_task(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
) -> ApiResult<TaskAccess> {
    let access = task(state, principal, id).await?;
    access.require_owner()?;
    Ok(access)
}

/// Loads a version of the task the caller may see: owners see every state,
/// borrowers never see drafts.
pub async fn version(
    state: &AppState,
    access: &TaskAccess,
    version_id: Uuid,
) -> ApiResult<VersionRow> {
    let row: Option<VersionRow> = sqlx::query_as(&format!(
        "SELECT {VERSION_COLUMNS} FROM {VERSION_FROM} WHERE v.id = $1 AND v.task_id = $2"
    ))
    .bind(version_id)
    .bind(access.row.id)
    .fetch_optional(&state.pool)
    .await?;
    match row {
        Some(row) if access.viewer == Viewer::Owner || row.state != "draft" => Ok(row),
        _ => Err(ApiError::NotFound),
    }
}

/// The response of a version as the caller sees it.
pub async fn version_response(
    state: &AppState,
    access: &TaskAccess,
    version_id: Uuid,
) -> ApiResult<super::views::SandboxTaskVersionResponse> {
    Ok(version_view(
        version(state, access, version_id).await?,
        access.viewer,
    ))
}

/// Runs a command on a version of the task and answers with the version as the
/// caller sees it afterwards.
pub async fn change_version(
    state: &AppState,
    access: &TaskAccess,
    version_id: Uuid,
    command: domain::tasks::version::TaskVersionCommand,
    metadata: &domain::principal::EventMetadata,
) -> ApiResult<super::views::SandboxTaskVersionResponse> {
    state
        .bus
        .execute::<domain::tasks::version::TaskVersion>(&version_id.to_string(), command, metadata)
        .await?;
    version_response(state, access, version_id).await
}
