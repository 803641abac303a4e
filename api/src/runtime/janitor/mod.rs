//! The janitor: ends upload sessions past their 24 hours and removes their staged
//! bytes, warns of and expires the contents of runs past their company's
//! `run_content_retention_days` ([`run_contents`]), removes the images of archived
//! environment versions nothing pinned for `unreferenced_image_retention_days`
//! ([`images`]) and the build caches of archived environments ([`build_caches`]),
//! removes table attachment files no record holds, and settles
//! expired agent proposals and stalled commits ([`proposals`]).

mod build_caches;
mod images;
mod proposals;
mod run_contents;

use crate::admission;
use crate::runtime::Runtime;
use crate::runtime::buildah::Buildah;
use domain::environments::upload::{ContextUpload, UploadCommand};
use domain::objects::{ObjectCommand, OwnedObject};
use domain::principal::{Actor, EventMetadata};
use domain::tables::column::UNHELD_FILE_KEPT;
use projections::read_models::owned_objects::query as objects;
use std::sync::Arc;
use std::time::Duration;
use uuid::Uuid;

/// Runs the sweep every `interval` until shutdown.
pub fn spawn(state: Arc<Runtime>, interval: Duration) {
    let runtime = state.clone();
    runtime.spawn(async move {
        loop {
            if let Err(error) = sweep(&state).await {
                tracing::error!(error = format!("{error:#}"), "janitor sweep failed");
            }
            tokio::select! {
                _ = state.shutdown.cancelled() => break,
                _ = tokio::time::sleep(interval) => {}
            }
        }
    })
}

/// Expires every live session and every run's contents past their lifetime, and
/// removes the attachment files no record holds, retired images and build caches,
/// and the working containers of killed builds.
pub async fn sweep(state: &Runtime) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    expire_sessions(state).await?;
    run_contents::expire(state, now).await?;
    run_contents::warn(state, now).await?;
    images::remove_unreferenced(state, now).await?;
    build_caches::remove_retired(state).await?;
    if let Err(error) = Buildah::new(&state.builder).remove_stray_containers().await {
        tracing::warn!(
            error = format!("{error:#}"),
            "leftover build containers were not removed"
        );
    }
    proposals::settle(state, now).await?;
    sweep_attachments(state, now).await
}

/// Removes the table attachment files that no live record holds and that were last
/// uploaded more than [`UNHELD_FILE_KEPT`] before `now`: every upload of the bytes is
/// marked for deletion, the bytes go, and the deletion is recorded. A record
/// deleted (or a cell emptied, a column or table deleted) thus takes its files
/// with it at the next sweep; a sweep that stopped halfway is finished by the next.
///
/// Each key is checked again under its lock ([`admission::object_lock`]), which
/// an upload of the same bytes holds while it puts them in place and records them:
/// an upload during the sweep either lands first (the key is fresh again and
/// stays) or after the bytes went (and puts them back).
pub async fn sweep_attachments(
    state: &Runtime,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    let before = now - UNHELD_FILE_KEPT;
    let unheld = objects::unheld_attachments(&state.pool, before, 500).await?;
    for (key, company, _) in unheld {
        let _lock = admission::object_lock(&state.pool, company, &key).await?;
        let Some(uploads) = objects::unheld_attachment(&state.pool, &key, before).await? else {
            continue;
        };
        for id in &uploads {
            let meta = metadata(company, *id, now);
            let command = ObjectCommand::RequestDeletion;
            state
                .bus
                .record::<OwnedObject>(&id.to_string(), command, &meta)
                .await?;
        }
        state.objects.delete(&key).await?;
        for id in &uploads {
            let meta = metadata(company, *id, now);
            let command = ObjectCommand::ConfirmDeletion;
            state
                .bus
                .record::<OwnedObject>(&id.to_string(), command, &meta)
                .await?;
        }
    }
    Ok(())
}

/// The janitor's metadata for a change of `subject` (curated environments belong
/// to no company).
pub(super) fn metadata(
    company: impl Into<Option<Uuid>>,
    subject: Uuid,
    now: chrono::DateTime<chrono::Utc>,
) -> EventMetadata {
    EventMetadata {
        actor: Actor::System("janitor"),
        company_id: company.into(),
        request_id: format!("janitor-{subject}"),
        time: now,
    }
}

async fn expire_sessions(state: &Runtime) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    let expired: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "SELECT id, company_id FROM context_uploads WHERE state IN ('uploading', 'completing') AND expires_at < $1",
    )
    .bind(now)
    .fetch_all(&state.pool)
    .await?;
    for (session_id, company) in expired {
        // The bytes first: a pass that stops between the two finds the session
        // live again and finishes it.
        state
            .objects
            .delete(&format!("staging/{session_id}"))
            .await?;
        let meta = metadata(company, session_id, now);
        state
            .bus
            .record::<ContextUpload>(
                &session_id.to_string(),
                UploadCommand::Expire { now },
                &meta,
            )
            .await?;
    }
    Ok(())
}
