//! Owner scopes of tenant resources (environments and tasks): who may create one
//! in a scope, and the name and description rules they share.

use crate::directory;
use crate::error::{ApiError, ApiResult};
use crate::routes::sandbox::environments::access::manages_scope;
use crate::state::AppState;
use domain::environments::environment::OwnerScope;
use domain::error::Code;
use domain::principal::Principal;
use domain::validation::{ViolationKind, Violations};
use uuid::Uuid;

/// The refusal for a scope the caller cannot own.
pub fn owner_scope_forbidden() -> ApiError {
    ApiError::code(
        Code::OwnerScopeForbidden,
        "you cannot own resources in this scope",
    )
}

/// The owner id of a new resource in `scope`: a company-owned one needs a company
/// manager (and no other company's id), a department-owned one a department of the
/// caller's company that the caller manages (or a company manager).
pub async fn resolve_owner(
    state: &AppState,
    principal: &Principal,
    scope: OwnerScope,
    owner_id: Option<Uuid>,
) -> ApiResult<Uuid> {
    match scope {
        OwnerScope::Company => {
            if owner_id.is_some_and(|id| id != principal.company_id)
                || !principal.is_company_manager()
            {
                return Err(owner_scope_forbidden());
            }
            Ok(principal.company_id)
        }
        OwnerScope::Department => {
            let department = owner_id.ok_or_else(|| {
                ApiError::invalid(&["body", "owner_id"], ViolationKind::Missing, None)
            })?;
            if !directory::department_in_company(&state.pool, principal.company_id, department)
                .await?
                || !manages_scope(state, principal, "department", Some(department)).await?
            {
                return Err(owner_scope_forbidden());
            }
            Ok(department)
        }
    }
}

/// Checks a name (1..256 characters) and a description (up to 2048).
pub fn check_text(name: Option<&str>, description: Option<&str>) -> ApiResult<()> {
    let mut violations = Violations::new();
    if let Some(name) = name {
        violations.length("name", name, 1, 256);
    }
    if let Some(description) = description {
        violations.length("description", description, 0, 2048);
    }
    violations
        .into_result()
        .map_err(|v| ApiError::Validation(v.0))
}

/// The refusal of a PATCH without any field.
pub fn no_fields() -> ApiError {
    ApiError::code(Code::NoFields, "send at least one field to change")
}
