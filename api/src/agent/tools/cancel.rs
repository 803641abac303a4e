//! `sandbox_cancel_job`: with a `run_id`, the principal's own run in the room (a
//! queued run at once, a started one by killing its container); without, the
//! principal's pending proposal in the room.

use super::super::call::AgentCall;
use super::super::refusal::{ToolError, ToolResult};
use crate::access::Run;
use chrono::Utc;
use domain::agent::proposal::{AgentProposal, ProposalCommand};
use domain::error::Code;
use domain::runs::run::{Run as RunAggregate, RunCommand};
use projections::read_models::agent_proposals::query as proposals;
use projections::read_models::runs::query as runs;
use serde::Deserialize;
use serde_json::json;
use uuid::Uuid;

/// Arguments of `sandbox_cancel_job`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CancelArgs {
    /// The run; absent: the pending proposal.
    run_id: Option<Uuid>,
}

/// Cancels a run or the pending proposal.
pub async fn run(call: &AgentCall, args: CancelArgs) -> ToolResult {
    let caller = &call.caller;
    if let Some(run_id) = args.run_id {
        let run = Run::in_room(caller, call.room.id, run_id).await?.row;
        let own = run.principal_type == caller.principal.principal_type
            && run.principal_id == caller.principal.principal_id;
        if !own {
            return Err(ToolError::new(
                Code::Unauthorized,
                "only the principal's own runs can be cancelled",
            ));
        }
        caller
            .command::<RunAggregate>(run_id, RunCommand::Cancel)
            .await?;
        let status = runs::run(caller.pool(), run_id)
            .await?
            .map(|r| r.status)
            .unwrap_or(run.status);
        return Ok(json!({"kind": "run_cancelled", "run_id": run_id, "run_status": status}));
    }
    let company = caller.principal.company_id;
    let pending = proposals::pending(caller.pool(), company, call.principal(), Utc::now()).await?;
    let Some(proposal) = pending.into_iter().find(|p| p.chatroom_id == call.room.id) else {
        return Err(ToolError::new(
            Code::NotFound,
            "no pending proposal in this room",
        ));
    };
    caller
        .command::<AgentProposal>(proposal.id, ProposalCommand::Cancel)
        .await?;
    Ok(json!({"kind": "proposal_cancelled", "proposal_id": proposal.id}))
}
