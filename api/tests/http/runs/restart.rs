//! A restart never leaves a run in `starting` or `running`: a server process is
//! killed (SIGKILL) while its executor runs a run, and the next server ends the run
//! `platform_failed` (`worker_lost`) and kills what is left of it on this host.

use super::{finished, runnable, running, submit};
use crate::environments::callers;
use crate::support::{JWT_SECRET, TestApp};
use crate::tasks::ready_environment_version;
use serde_json::json;
use std::process::{Child, Command, Stdio};

/// Starts `sandbox-api serve` on the test app's database and data directory.
fn server_process(app: &TestApp) -> Child {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    Command::new(env!("CARGO_BIN_EXE_sandbox-api"))
        .arg("serve")
        .env("DATABASE_URL", &app.db.url)
        .env("SANDBOX_DATA_DIR", app.data_dir())
        .env("SANDBOX_LISTEN", format!("127.0.0.1:{port}"))
        .env("SANDBOX_JWT_SECRET", JWT_SECRET)
        .env("SANDBOX_RUN_SLOTS", "2")
        .env("RUST_LOG", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("the server binary starts")
}

#[tokio::test]
async fn a_run_whose_server_was_killed_ends_platform_failed() {
    // This server accepts requests but executes nothing; a separate process does.
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "sleep 300\n", json!({})).await;

    let mut first = server_process(&app);
    let (status, run) = submit(
        &member,
        &lab,
        "k",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    let id = run["id"].as_str().unwrap();
    running(&member, &lab, id).await;
    first.kill().expect("SIGKILL");
    first.wait().unwrap();

    let mut second = server_process(&app);
    let done = finished(&member, &lab, id).await;
    second.kill().unwrap();
    second.wait().unwrap();
    assert_eq!(
        (done["status"].as_str(), done["error_code"].as_str()),
        (Some("platform_failed"), Some("worker_lost")),
        "{done}"
    );
    assert!(
        !sleeping_300(),
        "the work of the killed server's run was left running"
    );
    let workdir = app.data_dir().join("runs").join(id.replace('-', ""));
    assert!(!workdir.exists(), "its workspace was left: {workdir:?}");
}

/// Whether a `sleep 300` (the run's work) is running on this host.
fn sleeping_300() -> bool {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .any(|cmdline| cmdline == b"sleep\x00300\x00")
}
