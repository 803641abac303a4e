//! Owner scopes of tenant resources (environments and tasks): who manages a
//! company- or department-owned scope, and who may create a resource in one.

use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use domain::environments::environment::OwnerScope;
use domain::error::Code;
use domain::principal::PrincipalType;
use domain::validation::ViolationKind;
use projections::read_models::directory::query as directory;
use uuid::Uuid;

/// Whether the principal manages a company- or department-owned scope: a company
/// manager manages every scope, a user the departments they manage.
pub async fn manages(
    caller: &Caller,
    scope: OwnerScope,
    owner_id: Option<Uuid>,
) -> ApiResult<bool> {
    if caller.principal.is_company_manager() {
        return Ok(true);
    }
    match (scope, owner_id) {
        (OwnerScope::Department, Some(department))
            if caller.principal.principal_type == PrincipalType::User =>
        {
            Ok(directory::manages_department(
                caller.pool(),
                caller.principal.principal_id,
                department,
            )
            .await?)
        }
        _ => Ok(false),
    }
}

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
    caller: &Caller,
    scope: OwnerScope,
    owner_id: Option<Uuid>,
) -> ApiResult<Uuid> {
    match scope {
        OwnerScope::Company => {
            if owner_id.is_some_and(|id| id != caller.principal.company_id)
                || !caller.principal.is_company_manager()
            {
                return Err(owner_scope_forbidden());
            }
            Ok(caller.principal.company_id)
        }
        OwnerScope::Department => {
            let department = owner_id.ok_or_else(|| {
                ApiError::invalid(&["body", "owner_id"], ViolationKind::Missing, None)
            })?;
            if !directory::department_in_company(
                caller.pool(),
                caller.principal.company_id,
                department,
            )
            .await?
                || !manages(caller, OwnerScope::Department, Some(department)).await?
            {
                return Err(owner_scope_forbidden());
            }
            Ok(department)
        }
    }
}
