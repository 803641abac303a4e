//! Opening an agent's tool call: the authenticated principal (never a restricted
//! key), a valid turn naming that same principal, a live room of its company the
//! principal can see, and the room's `sandbox` job. Anything short of that opens
//! nothing: the tools are not listed and a call answers `unauthorized`.

use super::refusal::ToolError;
use super::turn::{TURN_HEADER, TurnClaims};
use crate::access::Room;
use crate::request::{Caller, Context};
use crate::state::AppState;
use axum::http::request::Parts;
use domain::directory::PrincipalRef;
use domain::principal::Principal;
use projections::read_models::directory::jobs::{self, SANDBOX_JOB};

/// A tool call with its trusted context.
pub struct AgentCall {
    /// The principal as a route's caller.
    pub caller: Caller,
    /// The turn being answered.
    pub turn: TurnClaims,
    /// The turn's room.
    pub room: Room,
}

impl AgentCall {
    /// Opens a call from the HTTP request that carries it.
    pub async fn open(state: &AppState, parts: &Parts) -> Result<Self, ToolError> {
        let principal = parts
            .extensions
            .get::<Principal>()
            .filter(|p| !p.is_restricted())
            .cloned()
            .ok_or_else(ToolError::unauthorized)?;
        let turn = parts
            .headers
            .get(TURN_HEADER)
            .and_then(|v| v.to_str().ok())
            .and_then(|token| state.turn.verify(token))
            .filter(|t| {
                t.principal_type == principal.principal_type
                    && t.principal_id == principal.principal_id
            })
            .ok_or_else(ToolError::unauthorized)?;
        let caller = Caller {
            state: state.clone(),
            ctx: Context::of(&parts.headers),
            principal,
        };
        let room = Room::visible(&caller, turn.chatroom_id)
            .await
            .map_err(|_| ToolError::unauthorized())?;
        let company = caller.principal.company_id;
        let has_job = jobs::room_has_job(caller.pool(), company, room.id, SANDBOX_JOB)
            .await
            .map_err(ToolError::from)?;
        if !has_job {
            return Err(ToolError::unauthorized());
        }
        Ok(Self { caller, turn, room })
    }

    /// The caller as a directory reference.
    pub fn principal(&self) -> PrincipalRef {
        PrincipalRef {
            kind: self.caller.principal.principal_type,
            id: self.caller.principal.principal_id,
        }
    }
}
