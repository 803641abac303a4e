//! `sandbox-api serve` on its embedded defaults: with `DATABASE_URL` unset it starts
//! a private PostgreSQL cluster in the data directory, serves, and on SIGTERM stops
//! gracefully together with the cluster, including a cluster a killed server left
//! running (the cluster belongs to the data directory, not to one process).

mod process;

use nix::sys::signal::Signal;
use process::{Server, data_dir, signal};
use std::path::Path;

/// Starts a server on the embedded defaults and waits until it is healthy.
async fn serve(data: &Path) -> Server {
    process::serve(data, &[]).await
}

fn database_url(data: &Path) -> String {
    std::fs::read_to_string(data.join("database.url"))
        .expect("database.url is written")
        .trim()
        .to_string()
}

async fn answers(url: &str) -> bool {
    projections::db::connect(url, 1).await.is_ok()
}

#[tokio::test]
async fn serve_starts_and_stops_its_embedded_database() {
    let data = data_dir();
    let mut server = serve(data.path()).await;
    let document = reqwest::get(format!("{}/openapi.json", server.base))
        .await
        .unwrap();
    assert!(document.status().is_success(), "it serves its routes");
    let url = database_url(data.path());
    let pool = projections::db::connect(&url, 1)
        .await
        .expect("the embedded database accepts connections");
    let migrated: i64 = sqlx::query_scalar("SELECT count(*) FROM projection_checkpoints")
        .fetch_one(&pool)
        .await
        .unwrap();
    assert!(
        migrated >= 2,
        "migrations ran and the pump registered its projections"
    );
    pool.close().await;
    let status = signal(&mut server, Signal::SIGTERM).await;
    assert!(status.success(), "graceful shutdown exits 0");
    assert!(
        !answers(&url).await,
        "the embedded cluster is stopped with the server"
    );
}

#[tokio::test]
async fn a_cluster_left_by_a_killed_server_is_adopted_and_stopped() {
    let data = data_dir();
    let mut killed = serve(data.path()).await;
    signal(&mut killed, Signal::SIGKILL).await;
    let url = database_url(data.path());
    assert!(answers(&url).await, "SIGKILL leaves the cluster running");
    let mut next = serve(data.path()).await;
    assert!(answers(&url).await);
    let status = signal(&mut next, Signal::SIGTERM).await;
    assert!(status.success(), "graceful shutdown exits 0");
    assert!(
        !answers(&url).await,
        "the server that adopted the cluster stops it"
    );
}
