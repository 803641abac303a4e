//! Approval holds (spec `custom-tables.md` sections 3 and 6): a callback write of
//! an event an approval rule of the table lists is not applied but held as a
//! [`StagedChange`], frozen with the gates of the rule's review template, and
//! answers `held_for_approval` (a terminal success). An update of a record that
//! already has one waiting answers `already_pending` with the original process. A
//! token has at most [`PENDING_BUCKET`] writes waiting; past it the write answers
//! 429 `approval_pending_bucket_full`. With an `idempotency_key` the staged change
//! id is derived from the key, so a resend answers the same hold (`replayed:
//! true`) and another body with the key is 409.

use super::{CallbackWriteBody, CallbackWriteResult};
use crate::error::{ApiError, ApiResult};
use crate::routes::tables::scope::OpenTable;
use domain::error::Code;
use domain::ids::idempotent_target;
use domain::tables::callback_delivery::CallbackOp;
use domain::tables::rule::{self, RuleEvent};
use domain::tables::staged_change::{Held, StagedChange, StagedChangeCommand, process_id};
use projections::read_models::review::query::{self as review, ChangeRow};
use projections::read_models::tables::query as tables;
use uuid::Uuid;

/// Writes of one token that may wait for approval at once.
pub const PENDING_BUCKET: i64 = 50;

/// A callback write about to apply.
pub struct Write<'a> {
    /// The token.
    pub token_id: Uuid,
    /// The body.
    pub body: &'a CallbackWriteBody,
    /// The record it writes (a new id for a creation).
    pub record_id: Uuid,
    /// Its idempotency key.
    pub key: Option<&'a str>,
}

fn answer(status: &str, change: &ChangeRow, op: CallbackOp, replayed: bool) -> CallbackWriteResult {
    CallbackWriteResult {
        ok: true,
        op: op.as_str().into(),
        status: status.into(),
        record_id: None,
        process_id: Some(change.process_id),
        staged_change_id: Some(change.id),
        rule_label: Some(change.rule_label.clone()),
        replayed,
    }
}

/// Holds the write when an approval rule of the table lists its event; `None`
/// when no rule does (the write applies).
pub async fn hold_if_ruled(
    table: &OpenTable,
    write: Write<'_>,
) -> ApiResult<Option<CallbackWriteResult>> {
    let pool = table.caller.pool();
    let table_id = table.row.id;
    let company = table.row.company_id;
    let op = write.body.op;
    let event = match op {
        CallbackOp::Create => RuleEvent::Created,
        CallbackOp::Update => RuleEvent::Updated,
    };
    let rules = tables::rules(pool, table_id).await?;
    let Some(rule) = rule::holding(&rules, event) else {
        return Ok(None);
    };
    let staged_change_id = match write.key {
        Some(key) => {
            let owner = format!("callback_token:{}", write.token_id);
            idempotent_target(company, "callback-hold", &owner, key)
        }
        None => Uuid::new_v4(),
    };
    if let Some(earlier) = review::change(pool, staged_change_id).await? {
        let same = earlier.op == op.as_str()
            && earlier.data.0 == write.body.data
            && (op == CallbackOp::Create || earlier.record_id == write.record_id);
        if !same {
            return Err(ApiError::code(
                Code::IdempotencyConflict,
                "the idempotency key was used with another body",
            ));
        }
        return Ok(Some(answer("held_for_approval", &earlier, op, true)));
    }
    if op == CallbackOp::Update {
        let handle = table.handle();
        let found = handle.existing(pool, &[write.record_id]).await;
        if found.map_err(ApiError::internal)?.is_empty() {
            return Err(ApiError::NotFound);
        }
        if let Some(waiting) = review::pending_for_record(pool, table_id, write.record_id).await? {
            return Ok(Some(answer("already_pending", &waiting, op, false)));
        }
    }
    if review::pending_of_token(pool, write.token_id).await? >= PENDING_BUCKET {
        return Err(ApiError::code(
            Code::ApprovalPendingBucketFull,
            "this callback token has as many writes waiting for approval as it may; pause until reviewers decide",
        )
        .with("limit", PENDING_BUCKET));
    }
    let template = review::template(pool, company, rule.template_id)
        .await?
        .ok_or_else(|| {
            ApiError::internal(anyhow::anyhow!(
                "rule {} names the missing template {}",
                rule.id,
                rule.template_id
            ))
        })?;
    let held = Held {
        staged_change_id,
        process_id: process_id(staged_change_id),
        company_id: company,
        table_id,
        token_id: write.token_id,
        op,
        record_id: write.record_id,
        data: write.body.data.clone(),
        rule_id: rule.id.clone(),
        rule_label: rule.label.clone(),
        template_id: template.id,
        gates: template.gates.0,
        require_signature: template.require_signature,
        author: table.caller.principal.reference(),
    };
    let committed = table
        .caller
        .command::<StagedChange>(staged_change_id, StagedChangeCommand::Hold(Box::new(held)))
        .await?;
    let change = review::change(pool, staged_change_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Some(answer(
        "held_for_approval",
        &change,
        op,
        committed.events.is_empty(),
    )))
}
