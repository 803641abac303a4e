//! A restart never leaves a run in `starting` or `running`: a server process is
//! killed (SIGKILL) while its executor runs a run, and the next server ends the run
//! `platform_failed` (`worker_lost`) and kills what is left of it on this host. A
//! server's executor also removes, at its start, the work directories of ended
//! runs that another host recovered.

use super::{finished, runnable, running, submit};
use crate::environments::callers;
use crate::support::TestApp;
use crate::tasks::ready_environment_version;
use api::runtime::buildah::Buildah;
use serde_json::json;

#[tokio::test]
async fn a_run_whose_server_was_killed_ends_platform_failed() {
    // This server accepts requests but executes nothing; a separate process does.
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "sleep 300\n", json!({})).await;

    let mut first = app.server_process();
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

    let mut second = app.server_process();
    let done = finished(&member, &lab, id).await;
    second.kill().unwrap();
    second.wait().unwrap();
    assert_eq!(
        (done["status"].as_str(), done["error_code"].as_str()),
        (Some("platform_failed"), Some("worker_lost")),
        "{done}"
    );
    // Killed before the run was ended; a loaded machine may take a moment to reap it.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while TestApp::running_command(&["sleep", "300"]) && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert!(
        !TestApp::running_command(&["sleep", "300"]),
        "the work of the killed server's run was left running"
    );
    let workdir = app.data_dir().join("runs").join(id.replace('-', ""));
    assert!(!workdir.exists(), "its workspace was left: {workdir:?}");
    let containers = Buildah::new(&app.state.runtime.builder)
        .simple(&["containers", "--format", "{{.ContainerName}}"])
        .await
        .unwrap();
    let container = format!("sandbox-run-{}", id.replace('-', ""));
    assert!(
        !containers.lines().any(|name| name == container),
        "its working container was left: {containers}"
    );

    // The run ended elsewhere while its workspace stayed mounted here (its
    // server crashed, another host recovered it): the next start removes it.
    let workspace = workdir.join("workspace");
    std::fs::create_dir_all(&workspace).unwrap();
    let image = workdir.join("workspace.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let made = std::process::Command::new("sh")
        .arg("-c")
        .arg(r#"PATH="$PATH:/usr/sbin:/sbin"; mkfs.ext4 -q -F "$1" && mount -o loop "$1" "$2""#)
        .args(["sh", image.to_str().unwrap(), workspace.to_str().unwrap()])
        .status()
        .unwrap();
    assert!(made.success());
    let mut third = app.server_process();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while workdir.exists() && std::time::Instant::now() < deadline {
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    third.kill().unwrap();
    third.wait().unwrap();
    assert!(!workdir.exists(), "the ended run's work directory stayed");
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(!mounts.contains(workspace.to_str().unwrap()), "{mounts}");
}
