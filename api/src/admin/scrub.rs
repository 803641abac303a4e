//! Scrubbing a task version (`sandboxctl tasks scrub`): its owner-only content
//! (scripts, work command, ordinary env) is removed for good, from the read models
//! and from the log itself. The hash chain commits to that content by digest
//! (`domain::tasks::scrub`), so `sandboxctl events verify` still passes.
//!
//! Order: the script uploads of its task holding the same scripts and the
//! version's bundle are deleted, then the `TaskVersionScrubbed` event is recorded
//! (from then on the version is never runnable, and the read model forgets the
//! content), then the payloads of the version's draft and edit events are
//! rewritten and its snapshots dropped. Each step is idempotent, so a scrub
//! interrupted after its event is finished by running it again.

use super::operator_metadata;
use crate::state::AppState;
use anyhow::Context;
use domain::objects::{ObjectCommand, OwnedObject};
use domain::tasks::contents::VersionContents;
use domain::tasks::input;
use domain::tasks::scrub;
use domain::tasks::version::{TaskVersion, TaskVersionCommand};
use serde_json::Value;
use uuid::Uuid;

/// What a scrub removed.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Scrubbed {
    /// The version.
    pub task_version_id: Uuid,
    /// Its task.
    pub task_id: Uuid,
    /// Event payloads rewritten.
    pub payloads_rewritten: u64,
    /// Script uploads deleted.
    pub script_uploads_deleted: usize,
}

/// Scrubs one task version.
pub async fn scrub_version(
    state: &AppState,
    operator: &str,
    version_id: Uuid,
    reason: &str,
) -> anyhow::Result<Scrubbed> {
    let row: Option<(Uuid, Uuid, sqlx::types::Json<VersionContents>)> =
        sqlx::query_as("SELECT task_id, company_id, contents FROM task_versions WHERE id = $1")
            .bind(version_id)
            .fetch_optional(&state.pool)
            .await?;
    let (task_id, company_id, contents) =
        row.with_context(|| format!("no task version {version_id}"))?;
    let mut meta = operator_metadata(operator);
    meta.company_id = Some(company_id);
    let scripts: Vec<String> = [&contents.startup_script, &contents.work_script]
        .into_iter()
        .filter(|script| !script.is_empty())
        .map(|script| input::digest(script.as_bytes()))
        .collect();
    let mut objects = script_uploads(state, company_id, task_id, &scripts).await?;
    let script_uploads_deleted = objects.len();
    // The bundle goes too, unless another version still holding its content pins it.
    if let Some(bundle) = &contents.bundle {
        objects.extend(
            sqlx::query_as::<_, (Uuid, String)>(
                "SELECT o.id, o.key FROM owned_objects o
                  WHERE o.id = $1 AND o.deletion_state = 'active'
                    AND NOT EXISTS (SELECT 1 FROM task_versions v
                                     WHERE v.id <> $2 AND v.content_state = 'active'
                                       AND v.contents->'bundle'->>'object_id' = o.id::text)",
            )
            .bind(bundle.object_id)
            .bind(version_id)
            .fetch_optional(&state.pool)
            .await?,
        );
    }
    delete_objects(state, &meta, &objects).await?;
    state
        .bus
        .execute::<TaskVersion>(
            &version_id.to_string(),
            TaskVersionCommand::Scrub {
                reason: reason.to_string(),
            },
            &meta,
        )
        .await
        .map_err(|e| anyhow::anyhow!("{e}"))?;
    let payloads_rewritten = rewrite_payloads(state, version_id).await?;
    Ok(Scrubbed {
        task_version_id: version_id,
        task_id,
        payloads_rewritten,
        script_uploads_deleted,
    })
}

/// Replaces the scrubbable fields of the version's stored payloads with markers
/// and drops its snapshots, in one transaction.
async fn rewrite_payloads(state: &AppState, version_id: Uuid) -> anyhow::Result<u64> {
    let mut tx = state.pool.begin().await?;
    let rows: Vec<(i64, String, Value)> = sqlx::query_as(
        "SELECT sequence, event_type, payload::jsonb FROM events
          WHERE aggregate_type = 'task_version' AND aggregate_id = $1 AND event_type = ANY($2)
          FOR UPDATE",
    )
    .bind(version_id.to_string())
    .bind(&scrub::EVENT_TYPES[..])
    .fetch_all(&mut *tx)
    .await?;
    let mut rewritten = 0;
    for (sequence, event_type, payload) in rows {
        let Some(scrubbed) = scrub::scrubbed(&event_type, &payload) else {
            continue;
        };
        if scrubbed == payload {
            continue;
        }
        rewritten += sqlx::query(
            "UPDATE events SET payload = $3::json
              WHERE aggregate_type = 'task_version' AND aggregate_id = $1 AND sequence = $2",
        )
        .bind(version_id.to_string())
        .bind(sequence)
        .bind(sqlx::types::Json(scrubbed))
        .execute(&mut *tx)
        .await?
        .rows_affected();
    }
    sqlx::query(
        "DELETE FROM aggregate_snapshots WHERE aggregate_type = 'task_version' AND aggregate_id = $1",
    )
    .bind(version_id.to_string())
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(rewritten)
}

/// The task's live script uploads whose bytes are one of the scrubbed scripts (a
/// handle lives 24 hours and may hold the same text).
async fn script_uploads(
    state: &AppState,
    company_id: Uuid,
    task_id: Uuid,
    digests: &[String],
) -> anyhow::Result<Vec<(Uuid, String)>> {
    Ok(sqlx::query_as(
        "SELECT id, key FROM owned_objects
          WHERE kind = 'script' AND company_id = $1 AND key LIKE $2 AND digest = ANY($3)
            AND deletion_state = 'active'",
    )
    .bind(company_id)
    .bind(format!("scripts/{company_id}/{task_id}/%"))
    .bind(digests)
    .fetch_all(&state.pool)
    .await?)
}

/// Deletes owned objects: marked, bytes removed, deletion recorded.
async fn delete_objects(
    state: &AppState,
    meta: &domain::principal::EventMetadata,
    objects: &[(Uuid, String)],
) -> anyhow::Result<()> {
    for (id, key) in objects {
        let aggregate = id.to_string();
        state
            .bus
            .record::<OwnedObject>(&aggregate, ObjectCommand::RequestDeletion, meta)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
        state.objects.delete(key).await?;
        state
            .bus
            .record::<OwnedObject>(&aggregate, ObjectCommand::ConfirmDeletion, meta)
            .await
            .map_err(|e| anyhow::anyhow!("{e}"))?;
    }
    Ok(())
}
