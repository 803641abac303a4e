//! A binding as the caller may read and change it: the room's managers and the
//! task's owners read it; only the room's managers change it (a task owner who
//! does not manage the room gets 403).

use super::{INSUFFICIENT, Room, Task};
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use projections::read_models::sharing::query::{self, BindingRow};
use uuid::Uuid;

/// A binding of the caller's company the caller may read.
#[derive(Debug, Clone)]
pub struct Binding {
    /// The binding.
    pub row: BindingRow,
    /// The room, when the caller manages it.
    managed_room: Option<Room>,
}

impl Binding {
    /// A binding the caller may read: it manages the room or owns the task.
    pub async fn readable(caller: &Caller, id: Uuid) -> ApiResult<Self> {
        let row = query::binding(caller.pool(), caller.principal.company_id, id)
            .await?
            .ok_or(ApiError::NotFound)?;
        let managed_room = Room::standing(caller, row.chatroom_id)
            .await?
            .filter(|room| room.manager);
        if managed_room.is_none() {
            let owner = Task::read(caller, row.task_id)
                .await
                .is_ok_and(|task| task.owner());
            if !owner {
                return Err(ApiError::NotFound);
            }
        }
        Ok(Self { row, managed_room })
    }

    /// A binding the caller may change, with its room: 404 unless the caller may
    /// read it, 403 unless it manages the room.
    pub async fn changeable(caller: &Caller, id: Uuid) -> ApiResult<(Self, Room)> {
        let binding = Self::readable(caller, id).await?;
        match binding.managed_room.clone() {
            Some(room) => Ok((binding, room)),
            None => Err(ApiError::Forbidden(INSUFFICIENT)),
        }
    }
}
