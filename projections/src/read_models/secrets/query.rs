//! Queries of the `secrets` read model: masked bindings, approvals, and the slot
//! resolution of pinned versions in a room.

use crate::read_models::sharing::query::RoomPlace;
use chrono::{DateTime, Utc};
use domain::secrets::ConsumerScope;
use domain::secrets::resolve::{BoundValue, SlotResolution};
use domain::sharing::binding::SlotAssignment;
use domain::wire::from_wire;
use sqlx::PgPool;
use std::collections::HashMap;
use uuid::Uuid;

/// A secret binding (`secret_bindings`), masked: it never holds the value.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct SecretBindingRow {
    /// Id (one per generation).
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// `chatroom`, `department` or `company`.
    pub consumer_scope: String,
    /// The consumer's id.
    pub consumer_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Slot.
    pub slot_name: String,
    /// Generation.
    pub generation: i64,
    /// `active` or `revoked`.
    pub state: String,
    /// The current value version (internal; `None` once revoked).
    pub value_version_id: Option<Uuid>,
    /// Value versions written so far in this generation.
    pub version_count: i64,
    /// Who wrote or revoked last.
    pub written_by: String,
    /// First written.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
    /// Revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// An approval (`secret_approvals`).
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ApprovalRow {
    /// Id (one per generation).
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// `chatroom`, `department` or `company`.
    pub consumer_scope: String,
    /// The consumer's id.
    pub consumer_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// The exact version.
    pub task_version_id: Uuid,
    /// Its digest.
    pub task_version_digest: String,
    /// Approved slots, sorted.
    pub slot_names: Vec<String>,
    /// `explicit` or `enablement`.
    pub source: String,
    /// `active` or `revoked`.
    pub state: String,
    /// Why it was revoked (`superseded` by a newer approval, or the revoker's reason).
    pub revoke_reason: Option<String>,
    /// Who approved.
    pub approved_by: String,
    /// Approved.
    pub created_at: DateTime<Utc>,
    /// Revoked.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// A binding of the company.
pub async fn binding(
    pool: &PgPool,
    company: Uuid,
    id: Uuid,
) -> sqlx::Result<Option<SecretBindingRow>> {
    sqlx::query_as("SELECT * FROM secret_bindings WHERE id = $1 AND company_id = $2")
        .bind(id)
        .bind(company)
        .fetch_optional(pool)
        .await
}

/// The live binding of a slot for one consumer.
pub async fn live_binding(
    pool: &PgPool,
    company: Uuid,
    scope: ConsumerScope,
    consumer: Uuid,
    task: Uuid,
    slot: &str,
) -> sqlx::Result<Option<SecretBindingRow>> {
    sqlx::query_as(
        "SELECT * FROM secret_bindings
          WHERE company_id = $1 AND consumer_scope = $2 AND consumer_id = $3 AND task_id = $4
            AND slot_name = $5 AND state = 'active'",
    )
    .bind(company)
    .bind(scope.as_str())
    .bind(consumer)
    .bind(task)
    .bind(slot)
    .fetch_optional(pool)
    .await
}

/// The bindings of a task (newest first, at most `limit`).
pub async fn task_bindings(
    pool: &PgPool,
    company: Uuid,
    task: Uuid,
    limit: i64,
) -> sqlx::Result<Vec<SecretBindingRow>> {
    sqlx::query_as(
        "SELECT * FROM secret_bindings WHERE company_id = $1 AND task_id = $2
          ORDER BY created_at DESC, id DESC LIMIT $3",
    )
    .bind(company)
    .bind(task)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The bindings of one consumer (newest first, at most `limit`).
pub async fn consumer_bindings(
    pool: &PgPool,
    company: Uuid,
    scope: ConsumerScope,
    consumer: Uuid,
    limit: i64,
) -> sqlx::Result<Vec<SecretBindingRow>> {
    sqlx::query_as(
        "SELECT * FROM secret_bindings
          WHERE company_id = $1 AND consumer_scope = $2 AND consumer_id = $3
          ORDER BY created_at DESC, id DESC LIMIT $4",
    )
    .bind(company)
    .bind(scope.as_str())
    .bind(consumer)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// An approval of the company.
pub async fn approval(pool: &PgPool, company: Uuid, id: Uuid) -> sqlx::Result<Option<ApprovalRow>> {
    sqlx::query_as("SELECT * FROM secret_approvals WHERE id = $1 AND company_id = $2")
        .bind(id)
        .bind(company)
        .fetch_optional(pool)
        .await
}

/// The approvals of a task (newest first, at most `limit`).
pub async fn task_approvals(
    pool: &PgPool,
    company: Uuid,
    task: Uuid,
    limit: i64,
) -> sqlx::Result<Vec<ApprovalRow>> {
    sqlx::query_as(
        "SELECT * FROM secret_approvals WHERE company_id = $1 AND task_id = $2
          ORDER BY created_at DESC, id DESC LIMIT $3",
    )
    .bind(company)
    .bind(task)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The slots a consumer approved for an exact version, if it approved it.
pub async fn approved_slots(
    pool: &PgPool,
    scope: ConsumerScope,
    consumer: Uuid,
    version: Uuid,
) -> sqlx::Result<Option<Vec<String>>> {
    sqlx::query_scalar(
        "SELECT slot_names FROM secret_approvals
          WHERE task_version_id = $1 AND consumer_scope = $2 AND consumer_id = $3
            AND state = 'active'",
    )
    .bind(version)
    .bind(scope.as_str())
    .bind(consumer)
    .fetch_optional(pool)
    .await
}

#[derive(sqlx::FromRow)]
struct LiveValue {
    task_id: Uuid,
    owner_scope: String,
    owner_id: Uuid,
    slot_name: String,
    consumer_scope: String,
    consumer_id: Uuid,
    value_version_id: Uuid,
    byte_size: i64,
}

/// Resolves the slots of each task's pinned version in a room: the borrower's value
/// is the room's, else its department's, else the company's; the owner's is the one
/// bound for the task's owner scope. One query for the whole set.
pub async fn resolve_slots(
    pool: &PgPool,
    place: RoomPlace,
    tasks: &[(Uuid, &[SlotAssignment])],
) -> sqlx::Result<HashMap<Uuid, Vec<SlotResolution>>> {
    let ids: Vec<Uuid> = tasks
        .iter()
        .filter(|(_, slots)| !slots.is_empty())
        .map(|(id, _)| *id)
        .collect();
    let values: Vec<LiveValue> = if ids.is_empty() {
        Vec::new()
    } else {
        sqlx::query_as(
            "SELECT t.id AS task_id, t.owner_scope, t.owner_id, b.slot_name, b.consumer_scope,
                    b.consumer_id, b.value_version_id, b.byte_size
               FROM tasks t
               JOIN secret_bindings b ON b.task_id = t.id AND b.state = 'active'
              WHERE t.company_id = $1 AND t.id = ANY($2)
                AND ((b.consumer_scope = t.owner_scope AND b.consumer_id = t.owner_id)
                     OR (b.consumer_scope = 'chatroom' AND b.consumer_id = $3)
                     OR (b.consumer_scope = 'department' AND b.consumer_id = $4)
                     OR (b.consumer_scope = 'company' AND b.consumer_id = $1))",
        )
        .bind(place.company)
        .bind(&ids)
        .bind(place.room)
        .bind(place.department)
        .fetch_all(pool)
        .await?
    };
    let borrower_order = |v: &LiveValue| match v.consumer_scope.as_str() {
        "chatroom" if v.consumer_id == place.room => Some(0),
        "department" if Some(v.consumer_id) == place.department => Some(1),
        "company" if v.consumer_id == place.company => Some(2),
        _ => None,
    };
    let bound = |v: &LiveValue| {
        from_wire::<ConsumerScope>(&v.consumer_scope).map(|consumer_scope| BoundValue {
            consumer_scope,
            consumer_id: v.consumer_id,
            value_version_id: v.value_version_id,
            byte_size: v.byte_size,
        })
    };
    let mut resolved = HashMap::new();
    for (task, slots) in tasks {
        let of_task: Vec<&LiveValue> = values.iter().filter(|v| v.task_id == *task).collect();
        let slots = slots
            .iter()
            .map(|slot| {
                let of_slot = || of_task.iter().copied().filter(|v| v.slot_name == slot.name);
                let borrower = of_slot()
                    .filter_map(|v| borrower_order(v).map(|order| (order, v)))
                    .min_by_key(|(order, _)| *order)
                    .and_then(|(_, v)| bound(v));
                let owner = of_slot()
                    .find(|v| v.consumer_scope == v.owner_scope && v.consumer_id == v.owner_id)
                    .and_then(bound);
                SlotResolution {
                    name: slot.name.clone(),
                    policy: slot.policy,
                    borrower,
                    owner,
                }
            })
            .collect();
        resolved.insert(*task, slots);
    }
    Ok(resolved)
}
