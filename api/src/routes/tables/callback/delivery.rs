//! A callback write with an `idempotency_key`: received once per key for 24 hours
//! (the [`CallbackDelivery`] aggregate), applied once, replayed after.
//!
//! The request that receives the key applies the write and answers the receipt,
//! or releases the key when the write fails. A request with the same key and body
//! that finds the receipt answered replays it; one that finds it unanswered waits
//! for the first request, and if that never answers (its server died) applies the
//! same write itself: a creation targets the record id the receipt chose, so it
//! never creates a second record.

use super::{CallbackWriteResult, apply};
use crate::error::{ApiError, ApiResult};
use crate::routes::tables::scope::OpenTable;
use chrono::Utc;
use domain::error::Code;
use domain::ids::idempotent_target;
use domain::tables::callback_delivery::{CallbackDelivery, CallbackOp, DeliveryCommand, Receipt};
use domain::tables::record::Record;
use serde_json::{Map, Value};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// How long a request waits for the first request with its key beyond the longest
/// a living first request may wait for the read models after its write (the pump's
/// `wait_timeout`): taking over sooner could apply an update twice.
const WAIT_BEYOND_FIRST: Duration = Duration::from_secs(5);
/// How often it looks.
const POLL: Duration = Duration::from_millis(20);
/// How often a request receives its key again after a release.
const ATTEMPTS: usize = 5;

/// A keyed write.
pub struct Request<'a> {
    /// The token.
    pub token_id: Uuid,
    /// The idempotency key.
    pub key: String,
    /// Digest of the body.
    pub hash: String,
    /// Operation.
    pub op: CallbackOp,
    /// The record it writes (a new id for a creation).
    pub record_id: Uuid,
    /// Its cells.
    pub data: &'a Map<String, Value>,
}

/// Applies the write once for its key and answers its result.
pub async fn deliver(table: &OpenTable, request: Request<'_>) -> ApiResult<CallbackWriteResult> {
    let state = &table.caller.state;
    let metadata = table.caller.metadata();
    let owner = format!("callback_token:{}", request.token_id);
    let id = idempotent_target(table.row.company_id, "callback", &owner, &request.key).to_string();
    for _ in 0..ATTEMPTS {
        let receive = DeliveryCommand::Receive {
            token_id: request.token_id,
            key: request.key.clone(),
            request_hash: request.hash.clone(),
            op: request.op,
            record_id: request.record_id,
            at: Utc::now(),
        };
        let received = state
            .bus
            .append::<CallbackDelivery>(&id, receive, &metadata)
            .await?;
        let Some(receipt) = received.state.receipt.clone() else {
            continue;
        };
        if !received.events.is_empty() {
            let written = apply(table, receipt.op, receipt.record_id, request.data).await;
            let command = match written {
                Ok(()) => DeliveryCommand::Answer,
                Err(_) => DeliveryCommand::Release,
            };
            state
                .bus
                .append::<CallbackDelivery>(&id, command, &metadata)
                .await?;
            written?;
            return Ok(CallbackWriteResult::applied(
                receipt.op,
                receipt.record_id,
                false,
            ));
        }
        // `None`: released by a failed first request; receive it again.
        if let Some(receipt) = settled(table, &id, receipt, request.data).await? {
            return Ok(CallbackWriteResult::applied(
                receipt.op,
                receipt.record_id,
                true,
            ));
        }
    }
    Err(ApiError::code(
        Code::ConcurrentModification,
        "Concurrent write conflict (lock); please retry the request.",
    ))
}

/// Waits for the first request of a receipt to answer it; takes its write over
/// when it does not answer in time. `None` when the key was released meanwhile.
async fn settled(
    table: &OpenTable,
    id: &str,
    receipt: Receipt,
    data: &Map<String, Value>,
) -> ApiResult<Option<Receipt>> {
    let bus = &table.caller.state.bus;
    let deadline = Instant::now() + bus.pump().wait_timeout() + WAIT_BEYOND_FIRST;
    let mut current = Some(receipt);
    while let Some(receipt) = &current {
        if receipt.answered || Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(POLL).await;
        current = bus.load::<CallbackDelivery>(id).await?.receipt;
    }
    let Some(receipt) = current else {
        return Ok(None);
    };
    if !receipt.answered {
        take_over(table, id, &receipt, data).await?;
    }
    Ok(Some(receipt))
}

/// Finishes the write of a receipt whose first request did not answer.
async fn take_over(
    table: &OpenTable,
    id: &str,
    receipt: &Receipt,
    data: &Map<String, Value>,
) -> ApiResult<()> {
    let state = &table.caller.state;
    let record = receipt.record_id.to_string();
    let created = state.bus.load::<Record>(&record).await?.table_id.is_some();
    if receipt.op == CallbackOp::Update || !created {
        apply(table, receipt.op, receipt.record_id, data).await?;
    }
    state
        .bus
        .append::<CallbackDelivery>(id, DeliveryCommand::Answer, &table.caller.metadata())
        .await?;
    Ok(())
}
