//! `sandbox-api serve` on its embedded defaults: with `DATABASE_URL` unset it starts
//! a private PostgreSQL cluster in the data directory, serves, and on SIGTERM stops
//! gracefully together with the cluster.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test]
async fn serve_starts_and_stops_its_embedded_database() {
    let data = tempfile::tempdir().unwrap();
    // The cluster lives inside the data directory when the postgres account can reach
    // it, and is removed with it.
    std::fs::set_permissions(
        data.path(),
        std::os::unix::fs::PermissionsExt::from_mode(0o755),
    )
    .unwrap();
    let port = free_port();
    let mut server = Command::new(env!("CARGO_BIN_EXE_sandbox-api"))
        .arg("serve")
        .env_remove("DATABASE_URL")
        .env("SANDBOX_DATA_DIR", data.path())
        .env("SANDBOX_LISTEN", format!("127.0.0.1:{port}"))
        .env("SANDBOX_TRANSIT_KEY", "off")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    let healthy = loop {
        if let Ok(response) = client
            .get(format!("http://127.0.0.1:{port}/healthz"))
            .send()
            .await
        {
            break response.status().is_success();
        }
        assert!(Instant::now() < deadline, "the server did not come up");
        assert!(
            server.try_wait().unwrap().is_none(),
            "the server exited early"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert!(healthy);
    let url =
        std::fs::read_to_string(data.path().join("database.url")).expect("database.url is written");
    let pool = projections::db::connect(url.trim(), 1)
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

    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(server.id() as i32),
        nix::sys::signal::Signal::SIGTERM,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let status = loop {
        if let Some(status) = server.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "the server did not stop on SIGTERM"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "graceful shutdown exits 0");
    assert!(
        projections::db::connect(url.trim(), 1).await.is_err(),
        "the embedded cluster is stopped with the server"
    );
}
