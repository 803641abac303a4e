//! The enablement command: pinning a task's exact published version in a room
//! under the live grant that reaches it, recording the enabler's secret consent.
//! `POST /bindings`, accept-version and the granted-job routes all go through here.

use super::consent;
use crate::access::{Room, Task, not_runnable, not_shared, require_runnable};
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use crate::state::AppState;
use domain::secrets::owner_consumer;
use domain::sharing::binding::{
    Binding, BindingCommand, Pin, SlotAssignment, binding_aggregate_id,
};
use domain::tasks::version::TaskVersionState;
use projections::read_models::sharing::query::{self as sharing, GrantRow};
use projections::read_models::tasks::query as tasks;
use uuid::Uuid;

/// The pin of `version` (the newest published version by default) under `grant`:
/// 404 for a version of another task or a draft the caller may not see
/// (`sees_drafts`: the task's owners), 409 for one that cannot run (a draft its
/// owner names included).
pub async fn pin(
    state: &AppState,
    task: Uuid,
    version: Option<Uuid>,
    grant: &GrantRow,
    sees_drafts: bool,
) -> ApiResult<Pin> {
    let row = match tasks::pin_candidate(&state.pool, task, version).await? {
        Some(row) if row.state != TaskVersionState::Draft => row,
        Some(_) if sees_drafts => return Err(not_runnable()),
        _ if version.is_none() => return Err(not_runnable()),
        _ => return Err(ApiError::NotFound),
    };
    require_runnable(&row)?;
    let contents = row.contents.0;
    Ok(Pin {
        task_version_id: row.id,
        version_number: row.version_number,
        task_version_digest: row.canonical_digest,
        secret_slots: SlotAssignment::all(
            contents.secret_slot_names(),
            &grant.secret_slot_policies,
        ),
        input_schema: contents.input_schema,
        share_grant_id: grant.id,
    })
}

/// Enables `task` in a room the caller manages at `version` (the newest published
/// one by default); `exclusive` refuses when a binding is live instead of re-pinning
/// it. Returns the live binding's id.
pub async fn enable(
    caller: &Caller,
    room: &Room,
    task_id: Uuid,
    version: Option<Uuid>,
    exclusive: bool,
) -> ApiResult<Uuid> {
    let task = Task::enableable(caller, task_id).await?;
    let grant = room.required_grant(caller, task_id).await?;
    let pin = pin(&caller.state, task_id, version, &grant, task.owner()).await?;
    let current = sharing::live_binding(caller.pool(), room.id, task_id).await?;
    let command = BindingCommand::Enable {
        chatroom_id: room.id,
        task_id,
        company_id: task.row.task.company_id,
        pin: pin.clone(),
        restart: current.is_none(),
        exclusive,
    };
    caller
        .command::<Binding>(binding_aggregate_id(room.id, task_id), command)
        .await?;
    match sharing::live_binding(caller.pool(), room.id, task_id).await? {
        Some(id) => {
            let owner = owner_consumer(task.row.task.owner_scope, task.row.task.owner_id);
            consent::record(caller, room.place(), task_id, owner, &pin).await?;
            Ok(id)
        }
        // The grant was revoked or the task archived while this request decided.
        None => {
            Task::enableable(caller, task_id).await?;
            Err(not_shared())
        }
    }
}
