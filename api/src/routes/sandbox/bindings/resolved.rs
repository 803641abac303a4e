//! Binding responses with their pinned slots resolved in their rooms, as the menu
//! shows them. A revoked binding shows its slots unresolved (`missing`): nothing
//! runs under it.

use super::views::{SandboxBindingResponse, resolve_views};
use crate::error::ApiResult;
use crate::secrets::slots;
use domain::sharing::binding::BindingState;
use projections::read_models::sharing::query::{self as sharing, BindingRow};
use sqlx::PgPool;
use std::collections::{BTreeSet, HashMap};
use uuid::Uuid;

/// The responses of `rows`, resolving each enabled binding's slots in its room
/// (one resolution per room).
pub async fn responses(
    pool: &PgPool,
    company: Uuid,
    rows: Vec<BindingRow>,
) -> ApiResult<Vec<SandboxBindingResponse>> {
    let live =
        |row: &BindingRow| row.state == BindingState::Enabled && !row.secret_slots.is_empty();
    let rooms: BTreeSet<Uuid> = rows
        .iter()
        .filter(|r| live(r))
        .map(|r| r.chatroom_id)
        .collect();
    let rooms: Vec<Uuid> = rooms.into_iter().collect();
    let mut resolved = HashMap::new();
    for place in sharing::room_places(pool, company, &rooms).await? {
        let pins: Vec<_> = rows
            .iter()
            .filter(|r| live(r) && r.chatroom_id == place.room)
            .map(|r| (r.task_id, r.secret_slots.0.clone()))
            .collect();
        for (task, slots) in slots::resolve(pool, place, &pins).await? {
            resolved.insert((place.room, task), slots);
        }
    }
    Ok(rows
        .into_iter()
        .map(|row| {
            let key = (row.chatroom_id, row.task_id);
            let enabled = row.state == BindingState::Enabled;
            let mut response = SandboxBindingResponse::from(row);
            if enabled {
                resolve_views(&mut response.secret_slots, resolved.get(&key));
            }
            response
        })
        .collect())
}

/// The response of one binding.
pub async fn response(
    pool: &PgPool,
    company: Uuid,
    row: BindingRow,
) -> ApiResult<SandboxBindingResponse> {
    let mut answers = responses(pool, company, vec![row]).await?;
    Ok(answers.remove(0))
}
