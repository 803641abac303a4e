//! Typed, authorized handles: the one way a sandbox route turns (principal, id)
//! into something it may read or change.
//!
//! Each handle ([`Room`], [`Environment`], [`EnvironmentVersion`], [`Task`],
//! [`TaskVersion`], [`ShareGrant`], [`Binding`], [`Run`]) has constructors that
//! load the row through the read model's queries and decide with one policy (spec
//! section 7): anything the caller may not see answers the uniform 404; a resource
//! the caller sees but may not change answers 403 only where the spec names a real
//! refusal (room management, company-manager routes), and 404 everywhere else.
//! Routes hold handles, never bare ids, and queries take the ids a handle holds, so
//! a cross-tenant read cannot be written by accident. The custom-table side has the
//! same shape in `routes/tables/scope.rs` (`OpenTable`).

mod binding;
mod consumer;
mod environment;
mod room;
mod run;
pub mod scope;
mod share;
mod task;

pub use binding::Binding;
pub use consumer::{Consumer, Manageable};
pub use environment::{Environment, EnvironmentVersion};
pub use room::{Room, not_shared};
pub use run::Run;
pub use share::ShareGrant;
pub use task::{Task, TaskVersion, Viewer, not_runnable, require_bundle_runner, require_runnable};

use crate::error::ApiError;
use domain::principal::Principal;

/// The role refusal of spec section 7 (a plain string, not a code).
pub const INSUFFICIENT: &str = "Insufficient permissions.";

/// Company managers only (role 3 or higher, users only): 403 otherwise.
pub fn require_company_manager(principal: &Principal) -> Result<(), ApiError> {
    if principal.is_company_manager() {
        Ok(())
    } else {
        Err(ApiError::Forbidden(INSUFFICIENT))
    }
}
