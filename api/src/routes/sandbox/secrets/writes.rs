//! `POST /secrets`, `/secrets/rotate` and `/secrets/revoke` (consumer-scope
//! managers, `Idempotency-Key` required).
//!
//! A write checks the request, the caller's management of the consumer scope and
//! the task, opens the envelope, stores the value encrypted under a fresh data key,
//! records the binding event (a digest, never the value) and finally the operation,
//! which a repeated key replays. A revocation shreds the binding's value versions
//! first and records the event after, so a failure in between leaves values that
//! no longer decrypt rather than values that outlive their revocation.

use super::views::*;
use crate::access::{Consumer, Task};
use crate::admission::{self, AdmissionLock};
use crate::error::{ApiError, ApiResult};
use crate::idempotency::{IdempotencyKey, request_hash};
use crate::request::Caller;
use crate::secrets::SecretStore;
use axum::Json;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use domain::error::Code;
use domain::secrets::binding::{
    SecretBinding, SecretBindingCommand, SlotTarget, ValueVersion, secret_binding_aggregate_id,
};
use domain::secrets::operation::{
    OperationKind, OperationRecord, SecretOperation, SecretOperationCommand,
};
use domain::tasks::contents::valid_name;
use domain::validation::ViolationKind;
use projections::read_models::secrets::query as secrets;
use serde_json::{Value, json};
use uuid::Uuid;
use zeroize::Zeroizing;

/// Largest decrypted value.
pub const MAX_VALUE_BYTES: usize = 64 * 1024;
/// Smallest decrypted value.
pub const MIN_VALUE_BYTES: usize = 4;

/// A 422 of the secret-write slugs: a standard validation array with the slug as
/// `type` and `validation_error:<slug>` as `msg`, no input and no ctx.
fn slug(code: Code, field: &str) -> ApiError {
    ApiError::invalid(
        &["body", field],
        ViolationKind::Rule {
            kind: code.as_str(),
            message: format!("validation_error:{}", code.as_str()),
        },
        None,
    )
}

fn check_slot_name(slot_name: &str) -> ApiResult<()> {
    if valid_name(slot_name) {
        return Ok(());
    }
    Err(ApiError::invalid(
        &["body", "slot_name"],
        ViolationKind::Rule {
            kind: "string_pattern_mismatch",
            message: "String should match pattern '^[A-Za-z_][A-Za-z0-9_]{0,127}$'".into(),
        },
        None,
    ))
}

/// The request's envelope, after refusing plaintext.
fn envelope(body: &SandboxSecretWriteRequest) -> ApiResult<&SandboxEncryptedValue> {
    let plaintext = match &body.value {
        None | Some(Value::Null) => false,
        Some(Value::String(text)) => !text.is_empty(),
        Some(_) => true,
    };
    if plaintext {
        return Err(slug(Code::SandboxPlaintextValueRejected, "value"));
    }
    body.encrypted_value
        .as_ref()
        .ok_or_else(|| slug(Code::SandboxEncryptedValueRequired, "encrypted_value"))
}

/// Opens the envelope with the transit key and checks the value's bounds.
fn decrypt(caller: &Caller, sealed: &SandboxEncryptedValue) -> ApiResult<Zeroizing<Vec<u8>>> {
    let transit = caller
        .state
        .transit
        .as_ref()
        .ok_or_else(|| slug(Code::SandboxTransitKeypairMissing, "encrypted_value"))?;
    let undecryptable = || slug(Code::SandboxEncryptedValueUndecryptable, "encrypted_value");
    let decode = |text: &str| STANDARD.decode(text.trim()).map_err(|_| undecryptable());
    let value = transit
        .open(
            &decode(&sealed.encrypted_key)?,
            &decode(&sealed.iv)?,
            &decode(&sealed.ciphertext)?,
        )
        .ok_or_else(undecryptable)?;
    // Environment values are text without NUL.
    if std::str::from_utf8(&value).is_err() || value.contains(&0) {
        return Err(undecryptable());
    }
    if value.len() < MIN_VALUE_BYTES {
        return Err(slug(Code::SandboxValueTooShort, "encrypted_value"));
    }
    if value.len() > MAX_VALUE_BYTES {
        return Err(ApiError::invalid(
            &["body", "encrypted_value"],
            ViolationKind::TooLong(MAX_VALUE_BYTES),
            None,
        ));
    }
    Ok(value)
}

/// Holds the operation's idempotency key until the request answers: concurrent
/// requests with one key run one after another, so the first writes and the
/// others replay it (or conflict, with another body) instead of racing on the
/// binding.
async fn key_lock(caller: &Caller, operation_id: Uuid) -> ApiResult<AdmissionLock> {
    let purpose = format!("secret-operation/{operation_id}");
    Ok(admission::lock(caller.pool(), caller.principal.company_id, &purpose).await?)
}

/// The lock of one slot's binding, held by its writes, rotations and revokes
/// from their first read of the binding to their command: a revoke then shreds
/// exactly the versions it revokes, with no rotation landing in between (whose
/// value would outlive the revocation), and fails only with nothing shredded.
async fn slot_lock(caller: &Caller, aggregate: Uuid) -> ApiResult<AdmissionLock> {
    let purpose = format!("secret-binding/{aggregate}");
    Ok(admission::lock(caller.pool(), caller.principal.company_id, &purpose).await?)
}

/// The recorded operation of this key, if the same request already ran.
async fn replayed(
    caller: &Caller,
    operation_id: Uuid,
    hash: &str,
) -> ApiResult<Option<SandboxSecretOperationResponse>> {
    let operation = caller
        .state
        .bus
        .load::<SecretOperation>(&operation_id.to_string())
        .await?;
    let record = operation
        .replay(hash)
        .map_err(|e| crate::error::from_spec(&e))?;
    match record {
        Some(record) => Ok(Some(answer(caller, record).await?)),
        None => Ok(None),
    }
}

/// The response of a recorded operation.
async fn answer(
    caller: &Caller,
    record: &OperationRecord,
) -> ApiResult<SandboxSecretOperationResponse> {
    let binding = secrets::binding(
        caller.pool(),
        caller.principal.company_id,
        record.binding_id,
    )
    .await?
    .ok_or(ApiError::NotFound)?;
    Ok(SandboxSecretOperationResponse {
        id: record.operation_id,
        kind: record.kind.as_str(),
        state: if record.kind == OperationKind::Revoke {
            "terminal"
        } else {
            "applied"
        },
        secret_binding: binding.into(),
    })
}

/// Records the finished operation and answers it.
async fn record(
    caller: &Caller,
    record: OperationRecord,
) -> ApiResult<Json<SandboxSecretOperationResponse>> {
    caller
        .command::<SecretOperation>(
            record.operation_id,
            SecretOperationCommand::Record(record.clone()),
        )
        .await?;
    Ok(Json(answer(caller, &record).await?))
}

/// Writes or rotates a value.
pub async fn write(
    caller: Caller,
    key: IdempotencyKey,
    body: SandboxSecretWriteRequest,
    kind: OperationKind,
) -> ApiResult<Json<SandboxSecretOperationResponse>> {
    check_slot_name(&body.slot_name)?;
    let sealed = envelope(&body)?.clone();
    let consumer = Consumer::managed(&caller, body.consumer_scope, body.consumer_id).await?;
    let task = Task::read(&caller, body.task_id).await?;
    let store = caller.state.runtime.secrets.clone();
    let writer = store.writer()?;
    let value = decrypt(&caller, &sealed)?;
    let aggregate =
        secret_binding_aggregate_id(consumer.scope, consumer.id, task.id(), &body.slot_name);
    let digest = writer.digest(aggregate, &value);
    let route = format!("secrets/{}", kind.as_str());
    let operation_id = key.target(&caller.principal, &route);
    let hash = request_hash(&json!([
        kind.as_str(),
        consumer.scope.as_str(),
        consumer.id,
        task.id(),
        &body.slot_name,
        &digest
    ]));
    let _key = key_lock(&caller, operation_id).await?;
    if let Some(replay) = replayed(&caller, operation_id, &hash).await? {
        return Ok(Json(replay));
    }
    let _slot = slot_lock(&caller, aggregate).await?;
    let value_version_id = writer
        .put(caller.pool(), aggregate, &value)
        .await
        .map_err(ApiError::Internal)?;
    let command = SecretBindingCommand::Write {
        target: SlotTarget {
            company_id: caller.principal.company_id,
            consumer_scope: consumer.scope,
            consumer_id: consumer.id,
            task_id: task.id(),
            slot_name: body.slot_name.clone(),
        },
        operation_id,
        version: ValueVersion {
            value_version_id,
            value_hmac_sha256: digest,
            byte_size: value.len() as i64,
        },
        rotate: kind == OperationKind::Rotate,
    };
    let committed = match caller.command::<SecretBinding>(aggregate, command).await {
        Ok(committed) => committed,
        Err(error) => {
            if !matches!(error, ApiError::NotYetVisible(_)) {
                // Nothing refers to the stored version: destroy it.
                SecretStore::shred(caller.pool(), &[value_version_id]).await?;
            }
            return Err(error);
        }
    };
    let binding_id = committed
        .state
        .live
        .as_ref()
        .map(|live| live.binding_id)
        .ok_or(ApiError::NotFound)?;
    record(
        &caller,
        OperationRecord {
            operation_id,
            kind,
            binding_id,
            binding_aggregate_id: aggregate,
            request_hash: hash,
        },
    )
    .await
}

/// Revokes the live binding of a slot and shreds its values.
pub async fn revoke(
    caller: Caller,
    key: IdempotencyKey,
    body: SandboxSecretRevokeRequest,
) -> ApiResult<Json<SandboxSecretOperationResponse>> {
    // Nothing is decrypted here, so authorization comes first.
    let consumer = Consumer::managed(&caller, body.consumer_scope, body.consumer_id).await?;
    let task = Task::read(&caller, body.task_id).await?;
    check_slot_name(&body.slot_name)?;
    let operation_id = key.target(&caller.principal, "secrets/revoke");
    let hash = request_hash(&json!([
        "revoke",
        consumer.scope.as_str(),
        consumer.id,
        task.id(),
        &body.slot_name
    ]));
    let _key = key_lock(&caller, operation_id).await?;
    if let Some(replay) = replayed(&caller, operation_id, &hash).await? {
        return Ok(Json(replay));
    }
    let aggregate =
        secret_binding_aggregate_id(consumer.scope, consumer.id, task.id(), &body.slot_name);
    let _slot = slot_lock(&caller, aggregate).await?;
    let current = caller
        .state
        .bus
        .load::<SecretBinding>(&aggregate.to_string())
        .await?;
    let live = current.live.ok_or(ApiError::NotFound)?;
    SecretStore::shred(caller.pool(), &live.version_ids).await?;
    caller
        .command::<SecretBinding>(aggregate, SecretBindingCommand::Revoke { operation_id })
        .await?;
    record(
        &caller,
        OperationRecord {
            operation_id,
            kind: OperationKind::Revoke,
            binding_id: live.binding_id,
            binding_aggregate_id: aggregate,
            request_hash: hash,
        },
    )
    .await
}
