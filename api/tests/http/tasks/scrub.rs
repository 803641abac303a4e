//! Scrubbing a task version (`sandboxctl tasks scrub`): the content leaves the read
//! models, the log, the object store and any database dump; the version never
//! runs again; the hash chain still verifies and a rebuild agrees with the live
//! read model.

use super::{post_file, ready_environment_version};
use crate::environments::callers;
use crate::runs::{finished, runnable, submit};
use crate::support::{TestApp, assert_code};
use projections::read_models::tasks::TasksProjection;
use projections::rebuild::{Outcome, Rebuild, Target};
use serde_json::json;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// Text that appears only in the scrubbed version's scripts.
const MARK: &str = "scrub-me-5f0c3a9e";

fn files_holding(dir: &std::path::Path, text: &[u8]) -> Vec<std::path::PathBuf> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(files_holding(&path, text));
        } else if std::fs::read(&path)
            .map(|bytes| bytes.windows(text.len()).any(|w| w == text))
            .unwrap_or(false)
        {
            found.push(path);
        }
    }
    found
}

#[tokio::test]
async fn a_scrubbed_version_loses_its_content_everywhere_and_never_runs_again() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let script = format!("# {MARK}\necho done > \"$SERVICE_OUTPUT_FILE\"\n");
    let env = json!({"ordinary_env": {"MARKED": MARK}});
    let (task, version) = runnable(&boss, &ready, &script, env).await;
    let (status, upload) = post_file(
        &boss,
        &format!("/tasks/{task}/script-uploads"),
        script.as_bytes(),
    )
    .await;
    assert_eq!(status, 200, "{upload}");
    let enable = format!("/chatrooms/{lab}/granted-jobs/{task}/enable");
    let (status, enabled) = dm.post(&enable, json!({"task_version_id": version})).await;
    assert_eq!(status, 200, "{enabled}");
    let menu = format!("/chatrooms/{lab}/menu");
    assert_eq!(
        member.get(&menu).await.1["items"][0]["task_id"],
        task.as_str()
    );
    let body = json!({"task_version_id": version, "input": {}});
    let (status, run) = submit(&member, &lab, "before", body.clone()).await;
    assert_eq!(status, 200, "{run}");
    let ended = finished(&member, &lab, run["id"].as_str().unwrap()).await;
    assert_eq!(ended["status"], "completed", "{ended}");
    assert!(!files_holding(app.data_dir(), MARK.as_bytes()).is_empty());

    let scrubbed = api::admin::scrub::scrub_version(
        &app.state,
        "operator",
        version.parse().unwrap(),
        "a credential was pasted into the script",
    )
    .await
    .unwrap();
    assert_eq!(scrubbed.payloads_rewritten, 1, "{scrubbed:?}");
    assert_eq!(scrubbed.script_uploads_deleted, 1, "{scrubbed:?}");
    let again =
        api::admin::scrub::scrub_version(&app.state, "operator", scrubbed.task_version_id, "again")
            .await
            .unwrap();
    assert_eq!(
        again.payloads_rewritten, 0,
        "a second scrub finds nothing left"
    );

    // What the owner sees: the digests, no content.
    let (status, view) = boss.get(&format!("/tasks/{task}/versions/{version}")).await;
    assert_eq!(status, 200, "{view}");
    assert_eq!(view["content_state"], "scrubbed");
    assert_eq!(view["source_visible"], false);
    assert!(
        view.get("startup_script").is_none_or(|v| v.is_null()),
        "{view}"
    );
    assert!(
        view.get("work_script").is_none_or(|v| v.is_null()),
        "{view}"
    );
    assert!(!view.to_string().contains(MARK));
    assert!(
        view["content_hash"]
            .as_str()
            .unwrap()
            .starts_with("sha256:")
    );

    // Never runnable again, and off the room's menu.
    let (status, refused) = submit(&member, &lab, "after", body).await;
    assert_code(&(status, refused), 409, "content_scrubbed_irreversible");
    assert_eq!(member.get(&menu).await.1["items"], json!([]));

    // Not in the log, the snapshots, the read models or the object store.
    let dump = app.pg_dump();
    assert!(
        dump.contains("TaskVersionScrubbed"),
        "the dump covers the log"
    );
    assert!(
        !dump.contains(MARK),
        "the database dump still holds the script"
    );
    assert_eq!(
        files_holding(app.data_dir(), MARK.as_bytes()),
        Vec::<std::path::PathBuf>::new(),
        "files still hold the script"
    );

    // The chain verifies; a rebuild of the tasks read model equals the live one.
    let mut conn = app.db.pool.acquire().await.unwrap();
    let verification = projections::audit::verify::verify(&mut conn, &[], |_| {})
        .await
        .unwrap();
    assert_eq!(verification.broken, None);
    let head: i64 = sqlx::query_scalar("SELECT max(position) FROM events")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let projection = Arc::new(TasksProjection);
    let job = Rebuild::start(
        &app.db.pool,
        projection,
        Target::Until {
            position: head,
            schema: "scrub_check".into(),
        },
    )
    .await
    .unwrap();
    let outcome = job.run(&CancellationToken::new(), |_, _| {}).await.unwrap();
    assert!(matches!(outcome, Outcome::Built { .. }), "{outcome:?}");
    let live: String = sqlx::query_scalar("SELECT current_schema()::text")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let mut digests = Vec::new();
    for schema in [live.as_str(), "scrub_check"] {
        let digest = projections::digest::digest(&mut conn, schema, &["task_versions"]);
        digests.push(digest.await.unwrap());
    }
    assert_eq!(digests[0], digests[1]);
}
