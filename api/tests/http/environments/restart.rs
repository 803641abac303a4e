//! A restart never leaves a build going: a server process is killed (SIGKILL)
//! while its builder runs a `RUN` step, and the next server ends the attempt
//! `platform_failed` (`worker_lost`) and kills what is left of it on this host.

use super::{busybox_context, callers};
use crate::support::{Options, TestApp};
use std::time::{Duration, Instant};

#[tokio::test]
async fn a_build_whose_server_was_killed_ends_and_leaves_nothing_running() {
    // This server accepts requests but builds nothing; a separate process does.
    let app = TestApp::spawn_with(Options {
        workers: false,
        ..Options::default()
    })
    .await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("long").await;
    let version = boss
        .version(&env, busybox_context("RUN sleep 301\n", &[]))
        .await;

    let mut first = app.server_process();
    let attempt = boss.build(&env, &version).await;
    let id = attempt["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !TestApp::running_command(&["sleep", "301"]) {
        assert!(Instant::now() < deadline, "the build's step never started");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    first.kill().expect("SIGKILL");
    first.wait().unwrap();
    assert!(
        TestApp::running_command(&["sleep", "301"]),
        "the step outlives its server (what the next server must end)"
    );

    let mut second = app.server_process();
    let finished = boss.finished(&env, &version, &id).await;
    second.kill().unwrap();
    second.wait().unwrap();
    assert_eq!(
        (
            finished["status"].as_str(),
            finished["error_detail"].as_str()
        ),
        (Some("platform_failed"), Some("worker_lost")),
        "{finished}"
    );
    assert!(
        !TestApp::running_command(&["sleep", "301"]),
        "the killed server's build was left running"
    );
    let work = app.data_dir().join("builds").join(&id);
    assert!(!work.exists(), "its context was left: {work:?}");
}
