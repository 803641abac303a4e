//! The janitor: ends upload sessions past their 24 hours and removes their staged
//! bytes, and expires the contents of runs past their company's
//! `run_content_retention_days`, and removes table attachment files no record
//! holds.

use crate::runtime::Runtime;
use domain::environments::upload::{ContextUpload, UploadCommand};
use domain::objects::{ObjectCommand, OwnedObject};
use domain::principal::{Actor, EventMetadata};
use domain::runs::run::{Run, RunCommand};
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
/// removes the attachment files no record holds.
pub async fn sweep(state: &Runtime) -> anyhow::Result<()> {
    expire_sessions(state).await?;
    expire_run_contents(state).await?;
    sweep_attachments(state, chrono::Utc::now()).await
}

/// Removes the table attachment files that no live record holds and that were last
/// uploaded more than [`UNHELD_FILE_KEPT`] before `now`: every upload of the bytes is
/// marked for deletion, the bytes go, and the deletion is recorded. A record
/// deleted (or a cell emptied, a column or table deleted) thus takes its files
/// with it at the next sweep.
pub async fn sweep_attachments(
    state: &Runtime,
    now: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    let unheld = objects::unheld_attachments(&state.pool, now - UNHELD_FILE_KEPT, 500).await?;
    for (key, company, uploads) in unheld {
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

fn metadata(company: Uuid, subject: Uuid, now: chrono::DateTime<chrono::Utc>) -> EventMetadata {
    EventMetadata {
        actor: Actor::System("janitor"),
        company_id: Some(company),
        request_id: format!("janitor-{subject}"),
        time: now,
    }
}

#[derive(sqlx::FromRow)]
struct ExpiredRun {
    id: Uuid,
    company_id: Uuid,
    input_key: String,
    log_key: Option<String>,
    output_key: Option<String>,
    bundle_key: Option<String>,
}

/// Marks the contents of ended runs past their retention expired, then deletes
/// their objects (an inputs file only when no active run shares it and nothing
/// staged it in the last hour).
async fn expire_run_contents(state: &Runtime) -> anyhow::Result<()> {
    let now = chrono::Utc::now();
    let expired: Vec<ExpiredRun> = sqlx::query_as(
        "SELECT r.id, r.company_id, r.input_key, r.log_key, r.output_key, r.bundle_key
           FROM runs r LEFT JOIN company_settings s ON s.company_id = r.company_id
          WHERE r.content_state = 'active' AND r.terminal_at IS NOT NULL
            AND r.terminal_at < $1 - make_interval(days => coalesce(s.run_content_retention_days, 30))
          ORDER BY r.terminal_at LIMIT 500",
    )
    .bind(now)
    .fetch_all(&state.pool)
    .await?;
    for run in expired {
        state
            .bus
            .record::<Run>(
                &run.id.to_string(),
                RunCommand::ExpireContent,
                &metadata(run.company_id, run.id, now),
            )
            .await?;
        for key in [run.log_key, run.output_key, run.bundle_key]
            .into_iter()
            .flatten()
        {
            state.objects.delete(&key).await?;
        }
        let shared: bool = sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE input_key = $1 AND content_state = 'active')",
        )
        .bind(&run.input_key)
        .fetch_one(&state.pool)
        .await?;
        // Inputs are content-addressed: a submission staging the same bytes right
        // now rewrites the object, so a recently written one is kept.
        let recent = state
            .objects
            .modified_at(&run.input_key)
            .await?
            .is_some_and(|at| at > now - chrono::Duration::hours(1));
        if !shared && !recent {
            state.objects.delete(&run.input_key).await?;
        }
    }
    Ok(())
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
        let meta = metadata(company, session_id, now);
        state
            .bus
            .record::<ContextUpload>(
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
