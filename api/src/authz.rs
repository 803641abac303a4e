//! Authorization helpers: role checks and the directory facts they need.

use crate::error::ApiError;
use domain::principal::Principal;

/// The role refusal of spec section 7 (a plain string, not a code).
pub const INSUFFICIENT: &str = "Insufficient permissions.";

/// Company managers only (role 3 or higher, users only).
pub fn require_company_manager(principal: &Principal) -> Result<(), ApiError> {
    if principal.is_company_manager() {
        Ok(())
    } else {
        Err(ApiError::Forbidden(INSUFFICIENT))
    }
}
