//! `sandbox-api serve` on its embedded defaults: with `DATABASE_URL` unset it starts
//! a private PostgreSQL cluster in the data directory, serves, and on SIGTERM stops
//! gracefully together with the cluster, including a cluster a killed server left
//! running (the cluster belongs to the data directory, not to one process).

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A data directory the postgres account can reach (the cluster lives inside it
/// and is removed with it).
fn data_dir() -> tempfile::TempDir {
    let data = tempfile::tempdir().unwrap();
    std::fs::set_permissions(
        data.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    data
}

/// Starts a server on the embedded defaults and waits until it is healthy.
async fn serve(data: &Path) -> Child {
    let port = free_port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_sandbox-api"))
        .arg("serve")
        .env_remove("DATABASE_URL")
        .env("SANDBOX_DATA_DIR", data)
        .env("SANDBOX_LISTEN", format!("127.0.0.1:{port}"))
        .env("SANDBOX_TRANSIT_KEY", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        if let Ok(response) = client
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
        {
            assert!(response.status().is_success());
            return server;
        }
        assert!(Instant::now() < deadline, "the server did not come up");
        assert!(
            server.try_wait().unwrap().is_none(),
            "the server exited early"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends `signal` and waits for the server to exit.
async fn signal(server: &mut Child, signal: Signal) -> std::process::ExitStatus {
    kill(Pid::from_raw(server.id() as i32), signal).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = server.try_wait().unwrap() {
            return status;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop on {signal}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
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
