//! Exact-version consent recorded by enabling, binding and accepting a version
//! (spec section 2: "Enabling, creating a binding and accepting a version record
//! exact-version consent for borrower-secret scopes that the operator manages and
//! that are resolved. Missing slots or scopes managed by others still need setup
//! and approval.").
//!
//! The consent is an ordinary approval (source `enablement`) naming exactly the
//! slots each managed borrowing scope fills now; the executor checks it at claim
//! time like an explicit one.

use crate::access::Consumer;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use crate::secrets::slots;
use domain::secrets::ConsumerScope;
use domain::secrets::approval::{
    ApprovalSource, ApprovalTerms, SecretApproval, SecretApprovalCommand, approval_aggregate_id,
};
use domain::secrets::resolve::{borrowed_slots, snapshot};
use domain::sharing::binding::Pin;
use projections::read_models::sharing::query::RoomPlace;
use uuid::Uuid;

/// Records the caller's consent for the pinned version in every borrowing scope
/// it manages whose values fill the version's slots in the room.
pub async fn record(
    caller: &Caller,
    place: RoomPlace,
    task_id: Uuid,
    owner: (ConsumerScope, Uuid),
    pin: &Pin,
) -> ApiResult<()> {
    if pin.secret_slots.is_empty() {
        return Ok(());
    }
    let resolved =
        slots::resolve(caller.pool(), place, &[(task_id, pin.secret_slots.clone())]).await?;
    let sources = snapshot(
        resolved
            .get(&task_id)
            .map(Vec::as_slice)
            .unwrap_or_default(),
    );
    for borrowed in borrowed_slots(&sources, owner) {
        let (scope, consumer) = (borrowed.consumer_scope, borrowed.consumer_id);
        match Consumer::managed(caller, scope, consumer).await {
            Ok(_) => {}
            Err(ApiError::Forbidden(_) | ApiError::NotFound) => continue,
            Err(other) => return Err(other),
        }
        let terms = ApprovalTerms {
            company_id: place.company,
            consumer_scope: scope,
            consumer_id: consumer,
            task_id,
            task_version_id: pin.task_version_id,
            task_version_digest: pin.task_version_digest.clone(),
            slot_names: borrowed.slot_names,
            source: ApprovalSource::Enablement,
        };
        let id = approval_aggregate_id(scope, consumer, pin.task_version_id);
        caller
            .command::<SecretApproval>(id, SecretApprovalCommand::Grant(terms))
            .await?;
    }
    Ok(())
}
