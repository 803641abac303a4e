//! A room the caller stands in: visible to its members, its managers (the
//! chatroom manager ladder) and restricted keys that allow it; managed by its
//! managers.

use super::INSUFFICIENT;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use domain::error::Code;
use projections::read_models::directory::query::{self as directory, RoomStanding};
use projections::read_models::sharing::query::{self as sharing, GrantRow, RoomPlace};
use std::ops::Deref;
use uuid::Uuid;

/// A live room of the caller's company the caller can see, with its standing.
#[derive(Debug, Clone)]
pub struct Room {
    standing: RoomStanding,
    company_id: Uuid,
}

impl Deref for Room {
    type Target = RoomStanding;
    fn deref(&self) -> &RoomStanding {
        &self.standing
    }
}

/// The refusal when no live grant reaches the room.
pub fn not_shared() -> crate::error::ApiError {
    crate::error::ApiError::code(
        Code::TaskNotSharedToRoom,
        "the task is not shared to this room, its department or the company",
    )
}

impl Room {
    /// A room the caller can see: 404 unless the caller is a member, manages it, or
    /// is a restricted key allowed into it (the key's allowlist is its authority).
    pub async fn visible(caller: &Caller, room: Uuid) -> ApiResult<Self> {
        let allowed = |id: Uuid| {
            caller.principal.is_restricted()
                && caller
                    .principal
                    .allowed_chatroom_ids
                    .as_ref()
                    .is_some_and(|ids| ids.contains(&id))
        };
        let standing = directory::room_standing(caller.pool(), &caller.principal, room)
            .await?
            .filter(|r| r.member || r.manager || allowed(r.id))
            .ok_or(ApiError::NotFound)?;
        Ok(Self {
            standing,
            company_id: caller.principal.company_id,
        })
    }

    /// A room the caller manages: 404 when it cannot see the room, 403 when it is
    /// only a member.
    pub async fn managed(caller: &Caller, room: Uuid) -> ApiResult<Self> {
        let room = Self::visible(caller, room).await?;
        if room.manager {
            Ok(room)
        } else {
            Err(ApiError::Forbidden(INSUFFICIENT))
        }
    }

    /// The caller's standing in a live room of its company without a visibility
    /// decision (`None` for an unknown, archived or foreign room); for rules that
    /// combine standing with other facts (binding readers).
    pub async fn standing(caller: &Caller, room: Uuid) -> ApiResult<Option<Self>> {
        Ok(
            directory::room_standing(caller.pool(), &caller.principal, room)
                .await?
                .map(|standing| Self {
                    standing,
                    company_id: caller.principal.company_id,
                }),
        )
    }

    /// Where the room sits, for the sharing queries.
    pub fn place(&self) -> RoomPlace {
        RoomPlace {
            company: self.company_id,
            room: self.standing.id,
            department: self.standing.department_id,
        }
    }

    /// The live grant of `task` that reaches this room (its own, then its
    /// department's, then the company's).
    pub async fn live_grant(&self, caller: &Caller, task: Uuid) -> ApiResult<Option<GrantRow>> {
        Ok(sharing::live_grant(caller.pool(), self.place(), task).await?)
    }

    /// [`Self::live_grant`], or 409 `task_not_shared_to_room`.
    pub async fn required_grant(&self, caller: &Caller, task: Uuid) -> ApiResult<GrantRow> {
        self.live_grant(caller, task).await?.ok_or_else(not_shared)
    }
}
