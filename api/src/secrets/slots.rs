//! Slot resolution for the routes: the room-facing views of a pinned version's
//! secret slots, and what a run pins at submission.

use crate::error::{ApiError, ApiResult};
use domain::secrets::resolve::{SlotResolution, SlotSources, snapshot};
use domain::sharing::binding::SlotAssignment;
use domain::tasks::contents::VersionContents;
use domain::validation::ViolationKind;
use projections::read_models::secrets::query as secrets;
use projections::read_models::sharing::query::RoomPlace;
use sqlx::PgPool;
use std::collections::HashMap;
use uuid::Uuid;

/// Most bytes of ordinary plus secret environment one run receives.
pub const MAX_RUN_ENV_BYTES: usize = 256 * 1024;

/// Resolves each task's pinned slots in the room.
pub async fn resolve(
    pool: &PgPool,
    place: RoomPlace,
    pins: &[(Uuid, Vec<SlotAssignment>)],
) -> ApiResult<HashMap<Uuid, Vec<SlotResolution>>> {
    let borrowed: Vec<(Uuid, &[SlotAssignment])> = pins
        .iter()
        .map(|(id, slots)| (*id, slots.as_slice()))
        .collect();
    Ok(secrets::resolve_slots(pool, place, &borrowed).await?)
}

/// What a run of the version pins for its slots in the room (`None` for a
/// version without slots); 422 when ordinary plus secret environment would exceed
/// 256 KiB.
pub async fn pin(
    pool: &PgPool,
    place: RoomPlace,
    task_id: Uuid,
    contents: &VersionContents,
    slots: Vec<SlotAssignment>,
) -> ApiResult<Option<SlotSources>> {
    if slots.is_empty() {
        return Ok(None);
    }
    let resolved = resolve(pool, place, &[(task_id, slots)]).await?;
    let slots = resolved
        .get(&task_id)
        .map(Vec::as_slice)
        .unwrap_or_default();
    let ordinary: usize = contents
        .ordinary_env
        .iter()
        .map(|(name, value)| name.len() + value.len() + 2)
        .sum();
    let secret: usize = slots
        .iter()
        .filter_map(|slot| {
            slot.used()
                .map(|(_, value)| slot.name.len() + value.byte_size as usize + 2)
        })
        .sum();
    if ordinary + secret > MAX_RUN_ENV_BYTES {
        return Err(ApiError::invalid(
            &["body", "task_version_id"],
            ViolationKind::Rule {
                kind: "value_error",
                message: "the version's ordinary plus secret environment exceeds 256 KiB".into(),
            },
            None,
        ));
    }
    Ok(Some(snapshot(slots)))
}
