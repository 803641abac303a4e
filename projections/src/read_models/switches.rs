//! The `switches` projection: the operator's kill switches (`sandbox_switches`),
//! one row per switch ever set, the build admission fence (`build_fences`, a row
//! while raised), runner release decisions (`runner_releases`), and the queries
//! the kill switch, build admission and bundle runs ask.

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::build_fence::{BuildFence, FENCE, FenceEvent};
use domain::runner_release::{ReleaseEvent, RunnerRelease};
use domain::switch::{SandboxSwitch, SwitchEvent, switch_id};
use sqlx::{PgConnection, PgPool};
use uuid::Uuid;

/// Projects [`SandboxSwitch`].
pub struct SwitchesProjection;

#[async_trait]
impl Projection for SwitchesProjection {
    fn name(&self) -> &'static str {
        "switches"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["sandbox_switches", "build_fences", "runner_releases"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["sandbox_switch", "build_fence", "runner_release"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            if let Some(fence) = event.decode::<BuildFence>()? {
                apply_fence(conn, event, fence).await?;
                continue;
            }
            if let Some(decision) = event.decode::<RunnerRelease>()? {
                apply_release(conn, event, decision).await?;
                continue;
            }
            let Some(SwitchEvent::SandboxSwitchSet(change)) = event.decode::<SandboxSwitch>()?
            else {
                continue;
            };
            sqlx::query(
                "INSERT INTO sandbox_switches (scope, company_id, enabled, reason, changed_by, changed_at)
                 VALUES ($1, $2, $3, $4, $5, $6)
                 ON CONFLICT (scope) DO UPDATE SET enabled = EXCLUDED.enabled, reason = EXCLUDED.reason,
                        changed_by = EXCLUDED.changed_by, changed_at = EXCLUDED.changed_at",
            )
            .bind(switch_id(change.company_id))
            .bind(change.company_id)
            .bind(change.enabled)
            .bind(&change.reason)
            .bind(event.actor())
            .bind(event.time())
            .execute(&mut *conn)
            .await?;
        }
        Ok(())
    }
}

async fn apply_fence(
    conn: &mut PgConnection,
    event: &StoredEvent,
    fence: FenceEvent,
) -> anyhow::Result<()> {
    match fence {
        FenceEvent::BuildFenceRaised {
            retry_after_seconds,
            reason,
        } => {
            sqlx::query(
                "INSERT INTO build_fences (id, retry_after_seconds, reason, changed_by, changed_at)
                 VALUES ($1, $2, $3, $4, $5)
                 ON CONFLICT (id) DO UPDATE SET retry_after_seconds = EXCLUDED.retry_after_seconds,
                        reason = EXCLUDED.reason, changed_by = EXCLUDED.changed_by,
                        changed_at = EXCLUDED.changed_at",
            )
            .bind(FENCE)
            .bind(retry_after_seconds as i32)
            .bind(reason)
            .bind(event.actor())
            .bind(event.time())
            .execute(&mut *conn)
            .await?;
        }
        FenceEvent::BuildFenceLifted { .. } => {
            sqlx::query("DELETE FROM build_fences WHERE id = $1")
                .bind(FENCE)
                .execute(&mut *conn)
                .await?;
        }
    }
    Ok(())
}

async fn apply_release(
    conn: &mut PgConnection,
    event: &StoredEvent,
    decision: ReleaseEvent,
) -> anyhow::Result<()> {
    let (approved, release, reason) = match decision {
        ReleaseEvent::RunnerReleaseApproved { release, reason } => (true, release, reason),
        ReleaseEvent::RunnerReleaseWithdrawn { release, reason } => (false, release, reason),
    };
    sqlx::query(
        "INSERT INTO runner_releases (release, approved, reason, changed_by, changed_at)
         VALUES ($1, $2, $3, $4, $5)
         ON CONFLICT (release) DO UPDATE SET approved = EXCLUDED.approved, reason = EXCLUDED.reason,
                changed_by = EXCLUDED.changed_by, changed_at = EXCLUDED.changed_at",
    )
    .bind(release)
    .bind(approved)
    .bind(reason)
    .bind(event.actor())
    .bind(event.time())
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Whether bundles run on images of `release`: the operator's last decision, or,
/// without one, whether it is the release the service builds with.
pub async fn runner_release_approved(pool: &PgPool, release: &str) -> sqlx::Result<bool> {
    let decided: Option<bool> =
        sqlx::query_scalar("SELECT approved FROM runner_releases WHERE release = $1")
            .bind(release)
            .fetch_optional(pool)
            .await?;
    Ok(decided.unwrap_or(release == domain::runner_release::BUILT_IN))
}

/// The advised wait while build admission is fenced.
pub async fn build_fence(pool: &PgPool) -> sqlx::Result<Option<i32>> {
    sqlx::query_scalar("SELECT retry_after_seconds FROM build_fences WHERE id = $1")
        .bind(FENCE)
        .fetch_optional(pool)
        .await
}

/// A switch as last set.
#[derive(Debug, Clone, serde::Serialize, sqlx::FromRow)]
pub struct SwitchRow {
    /// `global` or the company id.
    pub scope: String,
    /// The company (none for the global switch).
    pub company_id: Option<Uuid>,
    /// Whether the sandbox is on there.
    pub enabled: bool,
    /// Why it was set so.
    pub reason: String,
    /// Who set it.
    pub changed_by: String,
    /// When.
    pub changed_at: chrono::DateTime<chrono::Utc>,
}

/// Whether a switch covering the company (the global one, or its own) is off.
pub async fn off_for(pool: &PgPool, company: Option<Uuid>) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM sandbox_switches
                         WHERE NOT enabled AND (scope = 'global' OR company_id = $1))",
    )
    .bind(company)
    .fetch_one(pool)
    .await
}

/// Every switch ever set, the global one first.
pub async fn all(pool: &PgPool) -> sqlx::Result<Vec<SwitchRow>> {
    sqlx::query_as(
        "SELECT scope, company_id, enabled, reason, changed_by, changed_at FROM sandbox_switches
          ORDER BY company_id NULLS FIRST, scope",
    )
    .fetch_all(pool)
    .await
}
