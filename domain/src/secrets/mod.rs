//! Secrets (spec section 2 "Secrets"): values that fill a task's secret slots for
//! one consumer scope, the operations that write them, and the exact-version
//! approvals a borrower gives before its values reach another scope's code.
//!
//! No value ever enters the log: events record who wrote which slot, when, the id
//! of the encrypted value version (held by the API's secret store, outside the log)
//! and a keyed digest of it.

pub mod approval;
pub mod binding;
pub mod operation;
pub mod resolve;

/// Consumer scopes are the share target kinds (spec: `SandboxOwnerScope`,
/// `ShareTargetKind` and `ConsumerScope` are one enumeration without a user scope).
pub use crate::sharing::share::ShareTargetKind as ConsumerScope;

use crate::environments::environment::OwnerScope;
use uuid::Uuid;

/// A task owner as a secret consumer: its values are the `owner` side of a slot.
pub fn owner_consumer(scope: OwnerScope, id: Uuid) -> (ConsumerScope, Uuid) {
    let scope = match scope {
        OwnerScope::Company => ConsumerScope::Company,
        OwnerScope::Department => ConsumerScope::Department,
    };
    (scope, id)
}
