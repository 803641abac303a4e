//! The janitor: ends upload sessions past their 24 hours and removes their staged
//! bytes.

use crate::state::AppState;
use domain::environments::upload::{ContextUpload, UploadCommand};
use domain::principal::{Actor, EventMetadata};
use std::time::Duration;
use tokio::task::JoinHandle;
use uuid::Uuid;

/// Runs the sweep every `interval` until shutdown.
pub fn spawn(state: AppState, interval: Duration) -> JoinHandle<()> {
    tokio::spawn(async move {
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

/// Expires every live session past its lifetime.
pub async fn sweep(state: &AppState) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    let expired: Vec<(Uuid, Uuid)> = sqlx::query_as(
        "SELECT id, company_id FROM context_uploads WHERE state IN ('uploading', 'completing') AND expires_at < $1",
    )
    .bind(now)
    .fetch_all(&state.pool)
    .await?;
    for (session_id, company) in expired {
        let meta = EventMetadata {
            actor: Actor::System("janitor"),
            company_id: Some(company),
            request_id: format!("janitor-{session_id}"),
            time: now,
        };
        state
            .bus
            .execute::<ContextUpload>(
                &session_id.to_string(),
                UploadCommand::Expire { now },
                &meta,
            )
            .await?;
        state
            .objects
            .delete(&format!("staging/{session_id}"))
            .await?;
    }
    Ok(())
}
