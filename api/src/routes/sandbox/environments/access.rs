//! Who may see and change an environment.
//!
//! Metadata is readable by every member of the owning company, and curated
//! environments by every company. Changes, upload sessions, versions and builds need
//! the owner scope's management: a company manager for company-owned environments,
//! that department's manager or a company manager for department-owned ones. Curated
//! environments have no tenant write path. Anything the caller may not see or change
//! answers the uniform 404.

use crate::directory;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use chrono::{DateTime, Utc};
use domain::principal::Principal;
use uuid::Uuid;

/// An environment row as the routes read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct EnvironmentRow {
    /// Id.
    pub id: Uuid,
    /// Owning company (`None` for curated).
    pub company_id: Option<Uuid>,
    /// `system_curated` or `company`.
    pub owner_kind: String,
    /// `company` or `department`.
    pub owner_scope: String,
    /// The owning company or department.
    pub owner_id: Option<Uuid>,
    /// Name.
    pub name: String,
    /// Description.
    pub description: String,
    /// `active` or `archived`.
    pub lifecycle: String,
    /// `clear` or `blocked`.
    pub security_state: String,
    /// Created.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// The columns of [`EnvironmentRow`].
pub const ENVIRONMENT_COLUMNS: &str = "id, company_id, owner_kind, owner_scope, owner_id, name, description, \
     lifecycle, security_state, created_at, updated_at";

/// An environment the caller can see, and whether they may manage it.
#[derive(Debug, Clone)]
pub struct EnvironmentAccess {
    /// The environment.
    pub row: EnvironmentRow,
    /// Whether the caller manages its owner scope.
    pub can_manage: bool,
}

impl EnvironmentAccess {
    /// Refuses (404) unless the caller manages the environment.
    pub fn require_manage(&self) -> ApiResult<()> {
        if self.can_manage {
            Ok(())
        } else {
            Err(ApiError::NotFound)
        }
    }

    /// Whether the environment is curated.
    pub fn curated(&self) -> bool {
        self.row.owner_kind == "system_curated"
    }
}

/// Whether the principal manages a company- or department-owned scope.
pub async fn manages_scope(
    state: &AppState,
    principal: &Principal,
    scope: &str,
    owner_id: Option<Uuid>,
) -> ApiResult<bool> {
    if principal.is_company_manager() {
        return Ok(true);
    }
    match (scope, owner_id) {
        ("department", Some(department))
            if principal.principal_type == domain::principal::PrincipalType::User =>
        {
            Ok(
                directory::manages_department(&state.pool, principal.principal_id, department)
                    .await?,
            )
        }
        _ => Ok(false),
    }
}

/// Loads an environment the caller can see.
pub async fn environment(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
) -> ApiResult<EnvironmentAccess> {
    let row: Option<EnvironmentRow> = sqlx::query_as(&format!(
        "SELECT {ENVIRONMENT_COLUMNS} FROM environments WHERE id = $1"
    ))
    .bind(id)
    .fetch_optional(&state.pool)
    .await?;
    let row = row.ok_or(ApiError::NotFound)?;
    let curated = row.owner_kind == "system_curated";
    if !curated && row.company_id != Some(principal.company_id) {
        return Err(ApiError::NotFound);
    }
    let can_manage =
        !curated && manages_scope(state, principal, &row.owner_scope, row.owner_id).await?;
    Ok(EnvironmentAccess { row, can_manage })
}

/// Loads an environment the caller manages (404 otherwise, curated included).
pub async fn managed_environment(
    state: &AppState,
    principal: &Principal,
    id: Uuid,
) -> ApiResult<EnvironmentAccess> {
    let access = environment(state, principal, id).await?;
    access.require_manage()?;
    Ok(access)
}
