//! The name and description rules environments and tasks share, and the refusal of
//! a PATCH without any field (who may own them is `access::scope`).

use crate::error::{ApiError, ApiResult};
use domain::error::Code;
use domain::validation::Violations;

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
