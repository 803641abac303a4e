//! A run read in its room: members and managers of the room read its runs; a
//! restricted key reads only the runs it submitted. Anything else is the uniform
//! 404.

use super::Room;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use domain::principal::Principal;
use projections::read_models::runs::query::{self, RunRow};
use uuid::Uuid;

/// A run of a room the caller can see, readable by the caller.
#[derive(Debug, Clone)]
pub struct Run {
    /// The room.
    pub room: Room,
    /// The run.
    pub row: RunRow,
}

impl Run {
    /// The run of the room, if the caller may read it.
    pub async fn in_room(caller: &Caller, room: Uuid, run: Uuid) -> ApiResult<Self> {
        let room = Room::visible(caller, room).await?;
        let row =
            query::run_in_room(caller.pool(), caller.principal.company_id, room.id, run).await?;
        match row {
            Some(row) if readable_by(&caller.principal, &row) => Ok(Self { room, row }),
            _ => Err(ApiError::NotFound),
        }
    }
}

/// Whether the caller may read the run (restricted keys: only their own).
pub fn readable_by(principal: &Principal, run: &RunRow) -> bool {
    !principal.is_restricted()
        || (run.api_key_id.is_some() && run.api_key_id == principal.api_key_id)
}
