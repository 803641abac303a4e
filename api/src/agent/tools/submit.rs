//! `sandbox_submit_job` in mode `request`: a version on the room's menu with an
//! input. A version that needs no confirmation (and has no table-writeback policy)
//! is submitted at once (`submission_source=agent`); otherwise a proposal is
//! prepared, superseding the principal's other pending ones, and answered with a
//! receipt to commit it in a later human turn (`commit.rs`).
//!
//! Both outcomes are keyed by the turn, the version and the input's digest: the
//! same request resent in the same turn answers the same run or proposal.

use super::super::call::AgentCall;
use super::super::receipt::ReceiptBinding;
use super::super::refusal::{ToolError, ToolResult};
use super::SubmitArgs;
use crate::access::TaskVersion;
use crate::admission;
use crate::middleware::kill_switch;
use crate::routes::sandbox::runs::admission::{
    Admission, StagedInput, admit, check_schema, check_timeout, stage,
};
use crate::routes::sandbox::tasks::output_policy;
use chrono::Utc;
use domain::agent::proposal::{
    AgentProposal, PROPOSAL_TTL_SECONDS, ProposalCommand, ProposalState, ProposalTerms, Turn,
};
use domain::error::Code;
use domain::runs::run::SubmissionSource;
use domain::tasks::contents::OutputPolicy;
use projections::read_models::agent_proposals::query as proposals;
use projections::read_models::sharing::query::{self as sharing, MenuRow};
use projections::read_models::tasks::VersionRow;
use serde_json::{Value, json};
use uuid::Uuid;

/// The namespace of the ids an agent's requests derive.
const AGENT_IDS: Uuid = Uuid::from_u128(0x5a4d_b0c5_a9e1_4e3f_9c61_7d2a_0b3c_11e7);

/// Submits or proposes.
pub async fn run(call: &AgentCall, args: SubmitArgs) -> ToolResult {
    if args.proposal_receipt.is_some() {
        return Err(ToolError::invalid(
            "proposal_receipt: not allowed in mode request",
        ));
    }
    let (Some(version_id), Some(input)) = (args.task_version_id, args.input) else {
        return Err(ToolError::invalid(
            "mode request needs task_version_id and input",
        ));
    };
    let caller = &call.caller;
    kill_switch::check(&caller.state, Some(caller.principal.company_id)).await?;
    let staged = stage(caller, input.unwrap_or(Value::Null)).await?;
    let entry = sharing::menu_entry(caller.pool(), call.room.id, version_id)
        .await?
        .ok_or_else(|| {
            ToolError::new(
                domain::error::Code::NotFound,
                "the version is not on this room's menu",
            )
        })?;
    let version = TaskVersion::runnable(caller, version_id).await?;
    let timeout = check_timeout(
        args.timeout_seconds
            .unwrap_or(version.contents.timeout_seconds),
    )?;
    check_schema(&version.contents, &staged.value)?;
    let writeback = matches!(
        version.contents.output_policy,
        Some(OutputPolicy::CustomTableWriteback { .. })
    );
    let key = format!(
        "{}:{}:{}:{}:{}:{timeout}",
        call.room.id,
        call.turn.message_seq,
        caller.principal.reference(),
        version_id,
        staged.object.digest
    );
    if !version.contents.requires_confirmation && !writeback {
        let admission = Admission {
            run_id: Uuid::new_v5(&AGENT_IDS, format!("run:{key}").as_bytes()),
            room: &call.room,
            version: &version,
            input: &staged,
            timeout_seconds: timeout,
            source: SubmissionSource::Agent,
            retry_of_run_id: None,
            share_required: true,
            request_facts: None,
        };
        let run = admit(caller, admission).await?;
        return Ok(json!({
            "kind": "submitted",
            "run_id": run.id,
            "submission_source": "agent",
            "task_id": version.task_id,
            "task_version_id": version.id,
            "run_status": run.status,
        }));
    }
    output_policy::check_submission(caller, call.room.id, &version.contents).await?;
    let proposal_id = Uuid::new_v5(&AGENT_IDS, format!("proposal:{key}").as_bytes());
    propose(call, proposal_id, &entry, &version, &staged, timeout).await
}

/// Supersedes the principal's other pending proposals and prepares this one, or
/// finds it prepared by the same request earlier in the turn; answers it with a
/// fresh receipt. One principal prepares one proposal at a time, so two requests
/// never leave two pending.
async fn propose(
    call: &AgentCall,
    proposal_id: Uuid,
    entry: &MenuRow,
    version: &VersionRow,
    staged: &StagedInput,
    timeout: i64,
) -> ToolResult {
    let caller = &call.caller;
    let company = caller.principal.company_id;
    let key = format!("agent-proposals/{}", caller.principal.reference());
    let _principal = admission::lock(caller.pool(), company, &key).await?;
    let now = Utc::now();
    let existing =
        proposals::proposal(caller.pool(), company, call.principal(), proposal_id).await?;
    if let Some(existing) = &existing
        && existing.state != ProposalState::Prepared
    {
        return Err(ToolError::new(
            Code::ProposalNotPending,
            "this request's proposal is no longer pending; ask in a new turn",
        ));
    }
    for other in proposals::pending(caller.pool(), company, call.principal(), now).await? {
        if other.id != proposal_id {
            let supersede = ProposalCommand::Supersede { by: proposal_id };
            caller.command::<AgentProposal>(other.id, supersede).await?;
        }
    }
    let summary = format!(
        "Run \"{}\" (version {}) in this room with an input of {} bytes ({}), timeout {} s",
        entry.task_name,
        version.version_number,
        staged.object.byte_size,
        staged.object.digest,
        timeout
    );
    if existing.is_none() {
        let terms = ProposalTerms {
            proposal_id,
            company_id: company,
            chatroom_id: call.room.id,
            principal: call.principal(),
            task_id: version.task_id,
            task_version_id: version.id,
            input: staged.object.clone(),
            timeout_seconds: timeout,
            origin: Turn {
                message_id: call.turn.message_id.clone(),
                message_seq: call.turn.message_seq,
            },
            summary: summary.clone(),
            requires_confirmation: version.contents.requires_confirmation,
            expires_at: now + chrono::Duration::seconds(PROPOSAL_TTL_SECONDS),
        };
        let prepare = ProposalCommand::Prepare(Box::new(terms));
        caller
            .command::<AgentProposal>(proposal_id, prepare)
            .await?;
    }
    let binding = ReceiptBinding {
        proposal_id,
        principal: &caller.principal.reference(),
        chatroom_id: call.room.id,
        input_digest: &staged.object.digest,
        task_version_id: version.id,
    };
    Ok(json!({
        "kind": "prepared",
        "proposal_id": proposal_id,
        "proposal_receipt": caller.state.receipts.sign(&binding, now.timestamp()),
        "summary": summary,
        "requires_confirmation": version.contents.requires_confirmation,
        "task_id": version.task_id,
        "task_version_id": version.id,
    }))
}
