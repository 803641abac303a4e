//! Worker liveness: each worker writes a heartbeat; work claimed by a worker whose
//! heartbeat is stale is recovered by the others (or by the next start).

use sqlx::PgPool;
use std::time::Duration;

/// How often a worker beats.
pub const INTERVAL: Duration = Duration::from_secs(5);
/// A worker silent this long is considered gone.
pub const STALE_AFTER_SECONDS: i64 = 30;

/// A unique id for a worker of this process.
pub fn worker_id(kind: &str) -> String {
    let host = nix::unistd::gethostname()
        .ok()
        .and_then(|h| h.into_string().ok())
        .unwrap_or_else(|| "host".into());
    format!(
        "{kind}-{host}-{}-{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// Records that the worker is alive.
pub async fn beat(pool: &PgPool, worker_id: &str, kind: &str) -> sqlx::Result<()> {
    sqlx::query(
        "INSERT INTO worker_heartbeats (worker_id, kind, seen_at) VALUES ($1, $2, now())
         ON CONFLICT (worker_id) DO UPDATE SET seen_at = now()",
    )
    .bind(worker_id)
    .bind(kind)
    .execute(pool)
    .await?;
    Ok(())
}

/// SQL condition (on a `worker_id` column) that the claiming worker is gone.
pub const WORKER_GONE: &str =
    "NOT EXISTS (SELECT 1 FROM worker_heartbeats h WHERE h.worker_id = a.worker_id
      AND h.seen_at > now() - make_interval(secs => 30))";
