//! A PostgreSQL restart does not fail the statements that follow it.
//!
//! The pool trusts a connection returned moments ago without testing it again
//! (`db::connect`); after a restart every pooled connection is dead, so that trust
//! must end the moment the process sees the server drop a connection. The pump's
//! signal listener sees it: its connection is the one that is always reading.

use projections::db::{self, embedded::EmbeddedPostgres};
use projections::pump::{Pump, PumpConfig};
use tokio_util::sync::CancellationToken;

/// Statements taking the pool's connections at once (so most take a different one).
async fn busy(pool: &sqlx::PgPool, connections: usize) -> Vec<sqlx::Result<i32>> {
    futures::future::join_all((0..connections).map(|_| async {
        sqlx::query_scalar::<_, i32>("SELECT 1 FROM pg_sleep(0.05)")
            .fetch_one(pool)
            .await
    }))
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn statements_right_after_a_restart_succeed() -> anyhow::Result<()> {
    let dir = std::env::temp_dir().join(format!("pool-restart-{}", uuid::Uuid::new_v4()));
    let mut cluster = EmbeddedPostgres::plan(&dir)?;
    cluster.start().await?;
    let outcome = async {
        cluster.ensure_database("restart").await?;
        let pool = db::connect(&cluster.url("restart"), 4).await?;
        db::migrate(&pool).await?;
        let cancel = CancellationToken::new();
        let pump = Pump::new(pool.clone(), Vec::new(), PumpConfig::default());
        let pumping = pump.start(cancel.clone()).await?;

        for result in busy(&pool, 4).await {
            result?;
        }
        cluster.stop().await?;
        cluster.start().await?;
        let after: Vec<_> = busy(&pool, 4).await;

        cancel.cancel();
        pumping.await?;
        pool.close().await;
        for result in after {
            anyhow::ensure!(
                result.is_ok(),
                "a statement after the restart failed: {result:?}"
            );
        }
        Ok::<_, anyhow::Error>(())
    }
    .await;
    cluster.stop().await?;
    let _ = std::fs::remove_dir_all(&dir);
    outcome
}
