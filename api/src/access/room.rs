//! A room the caller stands in: visible to its members, its managers (the
//! chatroom manager ladder) and restricted keys that allow it; managed by its
//! managers.

use super::INSUFFICIENT;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use domain::error::Code;
use domain::principal::Principal;
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
    pub async fn visible(state: &AppState, principal: &Principal, room: Uuid) -> ApiResult<Self> {
        let allowed = |id: Uuid| {
            principal.is_restricted()
                && principal
                    .allowed_chatroom_ids
                    .as_ref()
                    .is_some_and(|ids| ids.contains(&id))
        };
        let standing = directory::room_standing(&state.pool, principal, room)
            .await?
            .filter(|r| r.member || r.manager || allowed(r.id))
            .ok_or(ApiError::NotFound)?;
        Ok(Self {
            standing,
            company_id: principal.company_id,
        })
    }

    /// A room the caller manages: 404 when it cannot see the room, 403 when it is
    /// only a member.
    pub async fn managed(state: &AppState, principal: &Principal, room: Uuid) -> ApiResult<Self> {
        let room = Self::visible(state, principal, room).await?;
        if room.manager {
            Ok(room)
        } else {
            Err(ApiError::Forbidden(INSUFFICIENT))
        }
    }

    /// The caller's standing in a live room of its company without a visibility
    /// decision (`None` for an unknown, archived or foreign room); for rules that
    /// combine standing with other facts (binding readers).
    pub async fn standing(
        state: &AppState,
        principal: &Principal,
        room: Uuid,
    ) -> ApiResult<Option<Self>> {
        Ok(directory::room_standing(&state.pool, principal, room)
            .await?
            .map(|standing| Self {
                standing,
                company_id: principal.company_id,
            }))
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
    pub async fn live_grant(&self, state: &AppState, task: Uuid) -> ApiResult<Option<GrantRow>> {
        Ok(sharing::live_grant(&state.pool, self.place(), task).await?)
    }

    /// [`Self::live_grant`], or 409 `task_not_shared_to_room`.
    pub async fn required_grant(&self, state: &AppState, task: Uuid) -> ApiResult<GrantRow> {
        self.live_grant(state, task).await?.ok_or_else(not_shared)
    }
}
