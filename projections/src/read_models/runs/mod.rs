//! The `runs` projection: runs as the run routes, the executor and the management
//! queries read them, their artifact files and their public links.

pub mod query;
mod submitted;

use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::runs::link::{LinkEvent, PublicLink};
use domain::runs::run::{Run, RunEnded, RunEvent, RunStatus, StoredObject, TerminalClass};
use sqlx::PgConnection;
use std::str::FromStr;
use submitted::Pending;
use uuid::Uuid;

/// Projects [`Run`] and [`PublicLink`].
pub struct RunsProjection;

fn status_name(status: RunStatus) -> String {
    super::wire(&status)
}

fn parts(object: &Option<StoredObject>) -> (Option<&str>, Option<i64>, Option<&str>) {
    match object {
        Some(o) => (
            Some(o.key.as_str()),
            Some(o.byte_size),
            Some(o.digest.as_str()),
        ),
        None => (None, None, None),
    }
}

/// Applies a run's event; a submission waits in `pending` to be inserted with the
/// ones next to it, and is inserted before any other event is applied.
async fn fold_run(
    conn: &mut PgConnection,
    pending: &mut Pending,
    id: Uuid,
    at: DateTime<Utc>,
    event: RunEvent,
) -> anyhow::Result<()> {
    if !matches!(event, RunEvent::RunSubmitted(_)) {
        pending.insert(conn).await?;
    }
    match event {
        RunEvent::RunSubmitted(submitted) => pending.push(id, at, submitted),
        RunEvent::RunClaimed { worker_id } => {
            sqlx::query(
                "UPDATE runs SET status = 'starting', worker_id = $2, updated_at = $3 WHERE id = $1",
            )
            .bind(id)
            .bind(worker_id)
            .bind(at)
            .execute(conn)
            .await?;
        }
        RunEvent::RunReattached { worker_id } => {
            sqlx::query("UPDATE runs SET worker_id = $2, updated_at = $3 WHERE id = $1")
                .bind(id)
                .bind(worker_id)
                .bind(at)
                .execute(conn)
                .await?;
        }
        RunEvent::RunContentExpiring { expires_at } => {
            sqlx::query("UPDATE runs SET content_expiring_at = $2, updated_at = $3 WHERE id = $1")
                .bind(id)
                .bind(expires_at)
                .bind(at)
                .execute(conn)
                .await?;
        }
        RunEvent::RunContentExpired => {
            sqlx::query("UPDATE runs SET content_state = 'expired', updated_at = $2 WHERE id = $1")
                .bind(id)
                .bind(at)
                .execute(conn)
                .await?;
        }
        RunEvent::RunStarted => {
            sqlx::query(
                "UPDATE runs SET status = 'running', started_at = $2, updated_at = $2 WHERE id = $1",
            )
            .bind(id)
            .bind(at)
            .execute(conn)
            .await?;
        }
        RunEvent::RunCancelRequested => {
            sqlx::query(
                "UPDATE runs SET status = 'cancel_requested', cancel_requested_at = $2, updated_at = $2
                  WHERE id = $1",
            )
            .bind(id)
            .bind(at)
            .execute(conn)
            .await?;
        }
        RunEvent::RunFinished(ended) => {
            let RunEnded {
                terminal_class,
                error_code,
                exit_code,
                log,
                output,
                bundle,
                artifacts,
            } = *ended;
            let status = status_name(RunStatus::from(terminal_class));
            let (log_key, log_bytes, log_digest) = parts(&log);
            let (output_key, output_bytes, output_digest) = parts(&output);
            let (bundle_key, bundle_bytes, bundle_digest) = parts(&bundle);
            let company: Option<Uuid> = sqlx::query_scalar(
                "UPDATE runs SET status = $2, error_code = $3, exit_code = $4,
                        log_key = $5, log_bytes = $6, log_digest = $7,
                        output_key = $8, output_bytes = $9, output_digest = $10,
                        bundle_key = $11, bundle_bytes = $12, bundle_digest = $13,
                        artifact_count = $14, terminal_at = $15, updated_at = $15
                  WHERE id = $1 RETURNING company_id",
            )
            .bind(id)
            .bind(status)
            .bind(error_code.filter(|_| terminal_class != TerminalClass::Completed))
            .bind(exit_code)
            .bind(log_key)
            .bind(log_bytes)
            .bind(log_digest)
            .bind(output_key)
            .bind(output_bytes)
            .bind(output_digest)
            .bind(bundle_key)
            .bind(bundle_bytes)
            .bind(bundle_digest)
            .bind(artifacts.len() as i32)
            .bind(at)
            .fetch_optional(&mut *conn)
            .await?;
            let Some(company) = company else {
                return Ok(());
            };
            for a in artifacts {
                sqlx::query(
                    "INSERT INTO run_artifacts (id, run_id, company_id, relative_path, byte_offset,
                            byte_size, digest, declared_content_type)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
                )
                .bind(a.artifact_id)
                .bind(id)
                .bind(company)
                .bind(a.relative_path)
                .bind(a.offset)
                .bind(a.byte_size)
                .bind(a.digest)
                .bind(a.declared_content_type)
                .execute(&mut *conn)
                .await?;
            }
        }
    }
    Ok(())
}

async fn fold_link(
    conn: &mut PgConnection,
    at: DateTime<Utc>,
    event: LinkEvent,
) -> anyhow::Result<()> {
    match event {
        LinkEvent::PublicLinkMinted {
            link_id,
            generation,
            run_id,
            company_id,
            object,
            artifact_id,
        } => {
            sqlx::query(
                "INSERT INTO public_links (id, run_id, company_id, object, artifact_id, generation,
                        revoked, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, false, $7) ON CONFLICT (id) DO NOTHING",
            )
            .bind(link_id)
            .bind(run_id)
            .bind(company_id)
            .bind(object.as_str())
            .bind(artifact_id)
            .bind(generation)
            .bind(at)
            .execute(conn)
            .await?;
        }
        LinkEvent::PublicLinkRevoked { link_id } => {
            sqlx::query("UPDATE public_links SET revoked = true, revoked_at = $2 WHERE id = $1")
                .bind(link_id)
                .bind(at)
                .execute(conn)
                .await?;
        }
    }
    Ok(())
}

#[async_trait]
impl Projection for RunsProjection {
    fn name(&self) -> &'static str {
        "runs"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["runs", "run_artifacts", "public_links"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["run", "public_link"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut pending = Pending::default();
        for event in events {
            let at = event.time();
            if let Some(e) = event.decode::<Run>()? {
                let id = Uuid::from_str(&event.aggregate_id).context("aggregate id")?;
                fold_run(conn, &mut pending, id, at, e).await?;
            } else if let Some(e) = event.decode::<PublicLink>()? {
                pending.insert(conn).await?;
                fold_link(conn, at, e).await?;
            }
        }
        pending.insert(conn).await?;
        Ok(())
    }
}
