//! Cancelling a build: while it builds (buildah is stopped), and once its work is
//! done but before its image is recorded (the worker finishes the cancel and
//! removes the image).

use super::{busybox_context, callers};
use crate::support::{TestApp, assert_code};
use api::runtime::buildah::Buildah;
use serde_json::json;
use std::time::{Duration, Instant};

#[tokio::test]
async fn cancel_moves_a_running_build_to_cancelled() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    let version = boss
        .version(&env, busybox_context("RUN sleep 97\n", &[]))
        .await;
    let attempt = boss.build(&env, &version).await;
    let id = attempt["id"].as_str().unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (_, now) = boss
            .get(&format!(
                "/environments/{env}/versions/{version}/builds/{id}"
            ))
            .await;
        // Cancelled once its `RUN` step runs, inside `buildah bud`'s working
        // container.
        let stepping = std::process::Command::new("pgrep")
            .args(["-f", "sleep 97"])
            .output()
            .unwrap();
        if now["status"] == "building" && !stepping.stdout.is_empty() {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "the build's step never ran: {now}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let cancel = format!("/environments/{env}/versions/{version}/builds/{id}/cancel");
    let (status, requested) = boss.post(&cancel, json!({})).await;
    assert_eq!(status, 200);
    assert!(
        ["cancel_requested", "cancelling", "cancelled"]
            .contains(&requested["status"].as_str().unwrap())
    );
    assert_eq!(
        boss.post(&cancel, json!({})).await.0,
        200,
        "repeating a cancel in progress is harmless"
    );
    let finished = boss.finished(&env, &version, id).await;
    assert_eq!(
        (finished["status"].as_str(), finished["error_code"].as_str()),
        (Some("cancelled"), Some("tenant_cancel"))
    );
    assert_code(&boss.post(&cancel, json!({})).await, 409, "not_cancellable");
    let buildah = Buildah::new(&app.state.runtime.builder);
    let left = buildah.simple(&["containers", "--quiet"]).await.unwrap();
    assert_eq!(left, "", "the stopped build left no working container");
    let (_, draft) = boss
        .get(&format!("/environments/{env}/versions/{version}"))
        .await;
    assert_eq!(
        draft["state"], "draft",
        "a cancelled build leaves a draft to build again"
    );
}

#[tokio::test]
async fn a_cancel_after_the_work_ends_the_build_cancelled_and_removes_its_image() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    let buildah = Buildah::new(&app.state.runtime.builder);
    // The cancel lands while the image is verified (after `buildah bud`, before
    // the image is recorded); one that comes too late finds the build completed,
    // and the next try builds another version.
    for _ in 0..4 {
        let version = boss.version(&env, busybox_context("", &[])).await;
        let attempt = boss.build(&env, &version).await;
        let id = attempt["id"].as_str().unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        loop {
            // Read from the log, not the read model: the window is short.
            let verifying: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM events WHERE event_type = 'BuildAdvanced'
                    AND payload->'BuildAdvanced'->>'attempt_id' = $1
                    AND payload->'BuildAdvanced'->>'status' = 'verifying')",
            )
            .bind(id)
            .fetch_one(&app.db.pool)
            .await
            .unwrap();
            if verifying {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "the build never got to verifying"
            );
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let cancel = format!("/environments/{env}/versions/{version}/builds/{id}/cancel");
        let (status, requested) = boss.post(&cancel, json!({})).await;
        if status == 409 {
            assert_eq!(requested["detail"]["code"], "not_cancellable");
            continue;
        }
        assert_eq!(status, 200, "{requested}");
        let finished = boss.finished(&env, &version, id).await;
        assert_eq!(
            (finished["status"].as_str(), finished["error_code"].as_str()),
            (Some("cancelled"), Some("tenant_cancel")),
            "{finished}"
        );
        let image = format!("localhost/sandbox-env/{version}:{}", id.replace('-', ""));
        assert!(
            !buildah.image_exists(&image).await,
            "the cancelled build's image is removed"
        );
        return;
    }
    panic!("every cancel came after the build was recorded");
}
