//! Approval holds (spec `custom-tables.md` sections 3 and 6): a callback write of
//! an event an approval rule of the table lists is not applied but held as a
//! [`StagedChange`], frozen with the gates of the rule's review template, and
//! answers `held_for_approval` (a terminal success). An update of a record that
//! already has one waiting answers `already_pending` with the original process. A
//! token has at most [`PENDING_BUCKET`] writes waiting; past it the write answers
//! 429 `approval_pending_bucket_full`. With an `idempotency_key` the staged change
//! id is derived from the key, so a resend answers the same hold (`replayed:
//! true`) and another body with the key is 409 — whatever the rules say by then; a
//! key that applied before a rule appeared replays that write instead of being
//! held. Holds of one record (or one creation) take turns.

use super::{CallbackWriteBody, CallbackWriteResult};
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::routes::tables::records;
use crate::routes::tables::scope::OpenTable;
use domain::error::Code;
use domain::ids::idempotent_target;
use domain::tables::callback_delivery::{CallbackDelivery, CallbackOp};
use domain::tables::rule::{self, RuleEvent};
use domain::tables::staged_change::{
    Held, HoldSource, StagedChange, StagedChangeCommand, process_id,
};
use domain::wire::wire;
use projections::read_models::review::query as review;
use projections::read_models::tables::query as tables;
use uuid::Uuid;

/// Writes of one token (or one Command) that may wait for approval at once.
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
    /// A callback token's write, or a Command's (`token_id` is then the Command).
    pub source: HoldSource,
}

/// The answer naming a held write (`held_for_approval`, replayed or not).
fn held_answer(held: &Held, replayed: bool) -> CallbackWriteResult {
    CallbackWriteResult {
        ok: true,
        op: held.op.as_str().into(),
        status: "held_for_approval".into(),
        record_id: None,
        process_id: Some(held.process_id),
        staged_change_id: Some(held.staged_change_id),
        rule_label: Some(held.rule_label.clone()),
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
    let owner = format!("{}:{}", wire(&write.source), write.token_id);
    let staged_change_id = match write.key {
        Some(key) => idempotent_target(company, "callback-hold", &owner, key),
        None => Uuid::new_v4(),
    };
    // A key held before answers its hold, whatever the rules say now.
    if let Some(earlier) = held_before(table, staged_change_id, &write).await? {
        return Ok(Some(earlier));
    }
    let rules = tables::rules(pool, table_id).await?;
    let Some(rule) = rule::holding(&rules, event) else {
        return Ok(None);
    };
    // A key that applied before a rule appeared replays that write.
    if let Some(key) = write.key {
        let delivery = idempotent_target(company, "callback", &owner, key);
        let received = table
            .caller
            .state
            .bus
            .load::<CallbackDelivery>(&delivery.to_string())
            .await?;
        if received.receipt.is_some() {
            return Ok(None);
        }
    }
    // A held write is checked as one that applies now would be (its values, the
    // migration lock, the right to edit the record): bad input is refused, not
    // held. Applying it later checks again.
    match op {
        CallbackOp::Create => records::creation(table, write.record_id, &write.body.data).await?,
        CallbackOp::Update => records::changing(table, write.record_id, &write.body.data).await?,
    };
    // One decision at a time per record (`already_pending`), or per creation.
    let subject = format!("held-write/{}", write.record_id);
    let _lock = admission::lock(pool, company, &subject).await?;
    if op == CallbackOp::Update
        && let Some(waiting) = review::pending_for_record(pool, table_id, write.record_id).await?
    {
        return Ok(Some(CallbackWriteResult {
            ok: true,
            op: op.as_str().into(),
            status: "already_pending".into(),
            record_id: None,
            process_id: Some(waiting.process_id),
            staged_change_id: Some(waiting.id),
            rule_label: Some(waiting.rule_label),
            replayed: false,
        }));
    }
    if review::pending_of_token(pool, write.token_id).await? >= PENDING_BUCKET {
        return Err(ApiError::code(
            Code::ApprovalPendingBucketFull,
            "this writer has as many writes waiting for approval as it may; pause until reviewers decide",
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
        source: write.source,
    };
    let result = held_answer(&held, false);
    let committed = table
        .caller
        .command::<StagedChange>(staged_change_id, StagedChangeCommand::Hold(Box::new(held)))
        .await?;
    if committed.events.is_empty() {
        // A concurrent request with the key held first.
        return held_before(table, staged_change_id, &write).await;
    }
    Ok(Some(result))
}

/// The answer to a write whose key was held before: the hold again (`replayed`),
/// or 409 `idempotency_conflict` when the body differs. `None`: never held.
async fn held_before(
    table: &OpenTable,
    staged_change_id: Uuid,
    write: &Write<'_>,
) -> ApiResult<Option<CallbackWriteResult>> {
    let bus = &table.caller.state.bus;
    let held = bus
        .load::<StagedChange>(&staged_change_id.to_string())
        .await?
        .held;
    let Some(held) = held else {
        return Ok(None);
    };
    let op = write.body.op;
    let same = held.op == op
        && held.data == write.body.data
        && (op == CallbackOp::Create || held.record_id == write.record_id);
    if !same {
        return Err(ApiError::code(
            Code::IdempotencyConflict,
            "the idempotency key was used with another body",
        ));
    }
    Ok(Some(held_answer(&held, true)))
}
