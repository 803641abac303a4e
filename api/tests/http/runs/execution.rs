//! The executor: a run really executes in its image, with its input, its output,
//! its artifacts and its log; failures, timeouts, cancels, no network, limits.

use super::{fetch_public, finished, runnable, running, submit};
use crate::environments::callers;
use crate::support::TestApp;
use crate::tasks::ready_environment_version;
use serde_json::json;

const WORK: &str = r#"
echo "greeting=$GREETING mode=$MODE"
cat "$SERVICE_INPUTS_FILE"; echo
mkdir -p "$SERVICE_ARTIFACTS_DIR/sub"
printf 'n,square\n3,9\n' > "$SERVICE_ARTIFACTS_DIR/sub/table.csv"
echo report > "$SERVICE_ARTIFACTS_DIR/report.txt"
ln -s /etc/passwd "$SERVICE_ARTIFACTS_DIR/leak"
printf '{"ok":true}' > "$SERVICE_OUTPUT_FILE"
cat /proc/self/cgroup
if wget -q -T 3 -O /dev/null http://1.1.1.1/ 2>/dev/null; then echo network=yes; else echo network=no; fi
echo "netdevs=$(tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' ' | tr '\n' ',')"
echo "processes=$(ls /proc | grep -c '^[0-9]')"
if head -c 1 /dev/vda >/dev/null 2>&1 || head -c 1 /dev/sda >/dev/null 2>&1; then echo disk=open; else echo disk=closed; fi
(setsid sleep 600 &)
echo "pwd=$(pwd)"
"#;

#[tokio::test]
async fn a_run_executes_its_version_in_the_image_and_keeps_what_it_left() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (task, version) = runnable(
        &boss,
        &ready,
        WORK,
        json!({"ordinary_env": {"MODE": "fast"}}),
    )
    .await;

    let (status, run) = submit(
        &member,
        &lab,
        "k1",
        json!({"task_version_id": version, "input": {"b": 1, "a": [true, null]}}),
    )
    .await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["submission_source"], "rest");
    assert_eq!(run["task_id"], task.as_str());
    assert_eq!(run["principal_type"], "user");
    assert_eq!(run["auth_method"], "jwt");
    assert_eq!(run["resource_profile"], "standard");
    assert!(run["secret_slot_provenance"].is_null());
    let id = run["id"].as_str().unwrap();
    let done = finished(&member, &lab, id).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert!(done["error_code"].is_null());
    assert!(done["queue_position"].is_null());

    let (_, content) = member
        .get(&format!("/chatrooms/{lab}/runs/{id}/content"))
        .await;
    assert_eq!(
        content,
        json!({"state": "active", "has_input": true, "has_output": true, "has_log": true,
               "has_artifact_bundle": true, "input_digest": run["input_digest"]})
    );

    // The log shows the environment, the canonical input, the sandbox's cgroups
    // and no network.
    let log = fetch_public(&member, &lab, id, "log").await;
    assert_eq!(log.status(), 200);
    assert_eq!(log.headers()["x-content-type-options"], "nosniff");
    assert!(
        log.headers()["content-disposition"]
            .to_str()
            .unwrap()
            .starts_with("attachment")
    );
    let log = log.text().await.unwrap();
    assert!(log.contains("greeting=hello mode=fast"), "{log}");
    assert!(log.contains(r#"{"a":[true,null],"b":1}"#), "{log}");
    assert!(log.contains("network=no"), "{log}");
    assert!(
        log.contains("netdevs=lo,"),
        "only a loopback interface: {log}"
    );
    let processes: usize = log
        .split("processes=")
        .nth(1)
        .and_then(|rest| rest.lines().next())
        .and_then(|n| n.trim().parse().ok())
        .expect("the process count is in the log");
    assert!(
        processes < 10,
        "the work sees only its own processes: {log}"
    );
    assert!(log.contains("disk=closed"), "{log}");
    let survivors = std::process::Command::new("pgrep")
        .args(["-f", "sleep 600"])
        .output()
        .unwrap();
    assert!(survivors.stdout.is_empty(), "no process outlives its run");
    assert!(log.contains("pwd=/workspace"), "{log}");
    if std::path::Path::new("/sys/fs/cgroup/memory/memory.limit_in_bytes").exists() {
        assert!(log.contains(":memory:/sandbox-run-"), "{log}");
        assert!(log.contains(":cpu:/sandbox-run-"), "{log}");
    }

    // Artifacts: regular files only, by path, with digests and content types.
    let (_, artifacts) = member
        .get(&format!("/chatrooms/{lab}/runs/{id}/artifacts"))
        .await;
    let items = artifacts["items"].as_array().unwrap();
    let paths: Vec<&str> = items
        .iter()
        .map(|a| a["relative_path"].as_str().unwrap())
        .collect();
    assert_eq!(paths, ["report.txt", "sub/table.csv"], "{artifacts}");
    assert_eq!(items[1]["byte_size"], 13);
    assert_eq!(items[1]["declared_content_type"], "text/csv");
    assert!(items[1]["digest"].as_str().unwrap().starts_with("sha256:"));
    let (_, page) = member
        .get(&format!("/chatrooms/{lab}/runs/{id}/artifacts?page_size=1"))
        .await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let (_, next) = member
        .get(&format!(
            "/chatrooms/{lab}/runs/{id}/artifacts?page_size=1&page_token={}",
            page["next_page_token"].as_str().unwrap()
        ))
        .await;
    assert_eq!(next["items"][0]["relative_path"], "sub/table.csv");
    // A forged cursor holding NUL (base64 of `"\u0000"`) is refused, not a 500.
    let (status, refused) = member
        .get(&format!(
            "/chatrooms/{lab}/runs/{id}/artifacts?page_token=Ilx1MDAwMCI"
        ))
        .await;
    assert_eq!(status, 422, "{refused}");
    let artifact = items[1]["id"].as_str().unwrap();
    let (status, capability) = member
        .post(
            &format!("/chatrooms/{lab}/runs/{id}/artifacts/{artifact}/download"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{capability}");
    assert_eq!(capability["x_content_type_options"], "nosniff");
    assert_eq!(capability["content_type"], "text/csv");
    assert_eq!(
        capability["content_disposition"],
        "attachment; filename=\"table.csv\""
    );

    // The artifact's public link serves exactly its bytes; the output's too.
    let file = fetch_public(&member, &lab, id, &format!("artifacts/{artifact}")).await;
    assert_eq!(file.headers()["content-type"], "text/csv");
    assert_eq!(file.headers()["cache-control"], "no-store");
    assert_eq!(file.text().await.unwrap(), "n,square\n3,9\n");
    let output = fetch_public(&member, &lab, id, "output").await;
    assert_eq!(output.text().await.unwrap(), r#"{"ok":true}"#);

    // The room's list, newest first, with a status filter.
    let (_, list) = member
        .get(&format!("/chatrooms/{lab}/runs?status[]=completed"))
        .await;
    assert_eq!(list["items"][0]["id"], id);
    let (_, none) = member
        .get(&format!("/chatrooms/{lab}/runs?status[]=queued"))
        .await;
    assert_eq!(none["items"], json!([]));
    assert_eq!(
        member
            .get(&format!("/chatrooms/{lab}/runs?status[]=bogus"))
            .await
            .0,
        422
    );
}

#[tokio::test]
async fn failures_timeouts_and_cancels_end_in_their_classes() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, failing) = runnable(&boss, &ready, "echo about to fail; exit 3\n", json!({})).await;
    let (_, sleepy) = runnable(&boss, &ready, "sleep 30\n", json!({})).await;

    let (_, run) = submit(
        &member,
        &lab,
        "fail",
        json!({"task_version_id": failing, "input": {}}),
    )
    .await;
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(
        (done["status"].as_str(), done["error_code"].as_str()),
        (Some("customer_failed"), Some("exit_nonzero"))
    );

    let (_, run) = submit(
        &member,
        &lab,
        "slow",
        json!({"task_version_id": sleepy, "input": {}, "timeout_seconds": 1}),
    )
    .await;
    assert_eq!(run["timeout_seconds"], 1);
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(
        (done["status"].as_str(), done["error_code"].as_str()),
        (Some("customer_failed"), Some("timeout"))
    );

    // A running run is killed on cancel; cancel works with the kill switch's logic
    // (a path ending in /cancel) and twice is harmless.
    let (_, run) = submit(
        &member,
        &lab,
        "cancel-me",
        json!({"task_version_id": sleepy, "input": {}}),
    )
    .await;
    let id = run["id"].as_str().unwrap();
    running(&member, &lab, id).await;
    let started = std::time::Instant::now();
    let (status, cancelling) = member
        .post(&format!("/chatrooms/{lab}/runs/{id}/cancel"), json!({}))
        .await;
    assert_eq!(status, 200, "{cancelling}");
    assert!(["cancel_requested", "cancelled"].contains(&cancelling["status"].as_str().unwrap()));
    let done = finished(&member, &lab, id).await;
    assert_eq!(done["status"], "cancelled");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(20),
        "the container was killed"
    );
    let (status, again) = member
        .post(&format!("/chatrooms/{lab}/runs/{id}/cancel"), json!({}))
        .await;
    assert_eq!(
        (status, again["detail"]["code"].as_str()),
        (409, Some("not_cancellable"))
    );
}

/// Fills the workspace: 500 MiB fit in a standard run's 512 MiB, 600 MiB do not.
const FILL: &str = r#"
echo "size=$(df -m /workspace | tail -1 | awk '{print $2}')"
dd if=/dev/zero of=/workspace/fill bs=1M count=500 2>/dev/null && echo wrote=500
rm /workspace/fill
dd if=/dev/zero of=/workspace/fill bs=1M count=600 && echo wrote=600
"#;

/// What the work writes outside `/workspace` (its container's writable layer)
/// takes from the same disk.
const FILL_ROOT: &str = r#"
echo "size=$(df -m / | tail -1 | awk '{print $2}')"
dd if=/dev/zero of=/bin/fill bs=1M count=300 2>/dev/null && echo wrote=300
dd if=/dev/zero of=/workspace/fill bs=1M count=300 && echo wrote=600
"#;

#[tokio::test]
async fn a_run_s_disk_holds_its_profile_s_workspace_size_and_no_more() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    for (key, script, written) in [
        ("fill-workspace", FILL, "wrote=500"),
        ("fill-root", FILL_ROOT, "wrote=300"),
    ] {
        let (_, filling) = runnable(&boss, &ready, script, json!({})).await;
        let body = json!({"task_version_id": filling, "input": {}});
        let (status, run) = submit(&member, &lab, key, body).await;
        assert_eq!(status, 200, "{run}");
        let id = run["id"].as_str().unwrap();
        let done = finished(&member, &lab, id).await;
        let log = fetch_public(&member, &lab, id, "log").await;
        let log = log.text().await.unwrap();
        assert_eq!(
            (done["status"].as_str(), done["error_code"].as_str()),
            (Some("customer_failed"), Some("workspace_limit_exceeded")),
            "{done}\n{log}"
        );
        let size: u32 = log
            .split("size=")
            .nth(1)
            .and_then(|rest| rest.lines().next())
            .and_then(|n| n.trim().parse().ok())
            .expect("the disk's size is in the log");
        assert!((512..=560).contains(&size), "{log}");
        assert!(log.contains(written), "{log}");
        assert!(!log.contains("wrote=600"), "{log}");
        // The disk went with the run.
        let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
        let run_dir = uuid::Uuid::parse_str(id).unwrap().simple().to_string();
        assert!(!mounts.contains(&run_dir), "{mounts}");
    }
}

#[tokio::test]
async fn a_run_takes_the_resource_profile_of_its_environment_version() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let env = boss.environment("large").await;
    let (status, uploaded) = boss
        .upload(&env, crate::environments::busybox_context("", &[]))
        .await;
    assert_eq!(status, 200, "{uploaded}");
    let (status, version) = boss
        .post(
            &format!("/environments/{env}/versions"),
            json!({"owned_object_id": uploaded["owned_object_id"], "resource_profile": "large"}),
        )
        .await;
    assert_eq!(status, 200, "{version}");
    let version = version["id"].as_str().unwrap().to_string();
    let attempt = boss.build(&env, &version).await;
    let built = boss
        .finished(&env, &version, attempt["id"].as_str().unwrap())
        .await;
    assert_eq!(built["terminal_class"], "completed", "{built}");
    let (_, task_version) = runnable(&boss, &version, "nproc\n", json!({})).await;
    let body = json!({"task_version_id": task_version, "input": {}});
    let (status, run) = submit(&member, &lab, "large", body).await;
    assert_eq!(status, 200, "{run}");
    assert_eq!(run["resource_profile"], "large");
    let done = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["resource_profile"], "large");
}
