//! `sandbox_submit_job` in mode `commit`: a human confirms a prepared proposal in
//! a strictly later turn by handing back its receipt. The receipt must be this
//! service's and bound to the proposal, the principal, the turn's room, the input
//! and the exact version; the turn must not have committed another proposal. The
//! proposal then moves to `committing`, its run is admitted from the staged input
//! (the same checks as any submission), and it ends `committed` with the run, or
//! `prepared` again after a transient failure, or `failed`. The winning turn may
//! resend its commit and gets `{kind: replay, run_id}`.

use super::super::call::AgentCall;
use super::super::receipt::{ReceiptBinding, ReceiptError};
use super::super::refusal::{ToolError, ToolResult};
use super::SubmitArgs;
use crate::access::TaskVersion;
use crate::admission;
use crate::error::ApiError;
use crate::middleware::kill_switch;
use crate::request::Caller;
use crate::routes::sandbox::runs::admission::{Admission, admit, staged_input};
use chrono::Utc;
use domain::agent::proposal::{AgentProposal, ProposalCommand, ProposalState, Turn};
use domain::error::Code;
use domain::runs::run::{Run, RunStatus, SubmissionSource};
use domain::wire::wire;
use projections::read_models::agent_proposals::query::{self as proposals, ProposalRow};
use projections::read_models::runs::query as runs;
use projections::read_models::sharing::query as sharing;
use serde_json::json;
use uuid::Uuid;

/// Commits a proposal.
pub async fn run(call: &AgentCall, args: SubmitArgs) -> ToolResult {
    if args.task_version_id.is_some() || args.input.is_some() || args.timeout_seconds.is_some() {
        return Err(ToolError::invalid(
            "mode commit takes only proposal_receipt",
        ));
    }
    let Some(receipt) = args.proposal_receipt else {
        return Err(ToolError::invalid("mode commit needs proposal_receipt"));
    };
    let caller = &call.caller;
    if !call.turn.human {
        return Err(ToolError::new(
            Code::ConfirmationRejected,
            "only a human turn confirms a proposal",
        ));
    }
    let keys = &caller.state.receipts;
    let forged = || {
        ToolError::new(
            Code::ForgedReceipt,
            "not a proposal receipt of this service",
        )
    };
    let not_found = || ToolError::new(Code::NotFound, "no pending proposal for this receipt");
    let proposal_id = keys.proposal_of(&receipt).map_err(|_| forged())?;
    let company = caller.principal.company_id;
    let seq = call.turn.message_seq;
    // One commit at a time in a turn of this principal: a resend waits for the
    // first and replays it, and `receipt_reused` is decided here.
    let turn_key = format!(
        "agent-turn/{}/{}/{seq}",
        call.room.id,
        caller.principal.reference()
    );
    let _turn = admission::lock(caller.pool(), company, &turn_key).await?;
    let row = proposals::proposal(caller.pool(), company, call.principal(), proposal_id)
        .await?
        .ok_or_else(not_found)?;
    let binding = ReceiptBinding {
        proposal_id,
        principal: &caller.principal.reference(),
        chatroom_id: call.room.id,
        input_digest: &row.input_digest,
        task_version_id: row.task_version_id,
    };
    let now = Utc::now();
    match keys.verify(&receipt, &binding, now.timestamp()) {
        Ok(()) => {}
        Err(ReceiptError::Forged) => return Err(forged()),
        Err(ReceiptError::NotValid) => return Err(not_found()),
    }
    if row.state == ProposalState::Prepared && now >= row.expires_at {
        let expire = ProposalCommand::Expire { now };
        caller.command::<AgentProposal>(proposal_id, expire).await?;
        return Err(not_found());
    }
    if proposals::turn_committed_another(
        caller.pool(),
        call.principal(),
        call.room.id,
        seq,
        proposal_id,
    )
    .await?
    {
        return Err(ToolError::new(
            Code::ReceiptReused,
            "this turn already committed another proposal",
        ));
    }
    let run_id = Uuid::new_v5(&proposal_id, b"run");
    let begin = ProposalCommand::BeginCommit {
        run_id,
        turn: Turn {
            message_id: call.turn.message_id.clone(),
            message_seq: seq,
        },
        now,
    };
    caller.command::<AgentProposal>(proposal_id, begin).await?;
    if row.state == ProposalState::Committed {
        return Ok(json!({"kind": "replay", "run_id": run_id, "proposal_id": proposal_id}));
    }
    // A run that exists already (a commit that stopped before completing) is the
    // proposal's: it completes without being admitted again.
    let admitted = match runs::run(caller.pool(), run_id).await? {
        Some(run) => Ok(wire(&run.status)),
        None => submit(call, &row, run_id).await,
    };
    let admitted = match admitted {
        // The run is in the log though its answer failed (the read models were
        // late): the proposal is committed, never committable a second time.
        Err(refusal) if transient(&refusal) && in_log(caller, run_id).await? => {
            Ok(wire(&RunStatus::Queued))
        }
        other => other,
    };
    let refusal = match admitted {
        Ok(run_status) => {
            let complete = ProposalCommand::CompleteCommit;
            caller
                .command::<AgentProposal>(proposal_id, complete)
                .await?;
            return Ok(json!({
                "kind": "submitted",
                "run_id": run_id,
                "proposal_id": proposal_id,
                "submission_source": "agent",
                "task_id": row.task_id,
                "task_version_id": row.task_version_id,
                "run_status": run_status,
            }));
        }
        Err(refusal) => refusal,
    };
    // A transient failure leaves the proposal committable; a refusal on the merits
    // ends it.
    let abandon = ProposalCommand::AbandonCommit {
        failed: !transient(&refusal),
        error: refusal.code.as_str().into(),
    };
    caller
        .command::<AgentProposal>(proposal_id, abandon)
        .await?;
    Err(refusal)
}

/// Whether a commit's failure may pass (the proposal stays committable).
fn transient(refusal: &ToolError) -> bool {
    matches!(
        refusal.code,
        Code::Retryable
            | Code::ConfirmationInputUnavailable
            | Code::ProviderUnavailable
            | Code::InternalError
    )
}

/// Whether the run is in the log (the read models may not show it yet).
async fn in_log(caller: &Caller, run_id: Uuid) -> Result<bool, ToolError> {
    let run = caller.state.bus.load::<Run>(&run_id.to_string()).await;
    Ok(run.map_err(ApiError::from)?.submitted.is_some())
}

/// Admits the proposal's run from its staged input; answers the run's status.
async fn submit(call: &AgentCall, row: &ProposalRow, run_id: Uuid) -> Result<String, ToolError> {
    let caller = &call.caller;
    kill_switch::check(&caller.state, Some(caller.principal.company_id)).await?;
    let company = caller.principal.company_id;
    // Gone or not stored again: both leave the proposal committable.
    let input = staged_input(&caller.state, company, &row.input_key, &row.input_digest)
        .await
        .ok()
        .flatten()
        .ok_or_else(|| {
            ToolError::new(
                Code::ConfirmationInputUnavailable,
                "the proposal's input cannot be replayed; commit again later",
            )
        })?;
    let enabled = sharing::menu_entry(caller.pool(), call.room.id, row.task_version_id).await?;
    if enabled.is_none() {
        return Err(ToolError::new(
            Code::Unauthorized,
            "the version is no longer enabled in this room",
        ));
    }
    let version = TaskVersion::runnable(caller, row.task_version_id).await?;
    let admission = Admission {
        run_id,
        room: &call.room,
        version: &version,
        input: &input,
        timeout_seconds: row.timeout_seconds,
        source: SubmissionSource::Agent,
        retry_of_run_id: None,
        share_required: true,
        request_facts: None,
    };
    Ok(admit(caller, admission).await?.status)
}
