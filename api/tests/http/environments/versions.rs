//! Environment versions: create rules, owner-only fields, capacity, archive.

use super::{busybox_context, callers};
use crate::support::{TestApp, assert_code, assert_validation};
use serde_json::json;

#[tokio::test]
async fn versions_are_created_from_completed_uploads() {
    let app = TestApp::spawn().await;
    let (_, boss, _, member) = callers(&app).await;
    let env = boss.environment("py").await;
    let (_, completed) = boss.upload(&env, busybox_context("", &[])).await;
    let object = completed["owned_object_id"].clone();
    let digest = completed["digest"].clone();
    let (status, v1) = boss
        .post(
            &format!("/environments/{env}/versions"),
            json!({"owned_object_id": object, "source_ref": "git:abc"}),
        )
        .await;
    assert_eq!(status, 200, "{v1}");
    assert_eq!(v1["version_number"], 1);
    assert_eq!(v1["state"], "draft");
    assert_eq!(v1["environment_name"], "py");
    assert_eq!(v1["resource_profile"], "standard");
    assert_eq!(v1["capacity_retained"], true);
    assert_eq!(v1["runner_release_approved"], true);
    assert!(v1["ready_at"].is_null());
    assert_eq!(
        (&v1["source_digest"], &v1["source_ref"]),
        (&digest, &json!("git:abc"))
    );
    let both =
        json!({"owned_object_id": object, "source_digest": digest, "resource_profile": "large"});
    let (status, v2) = boss
        .post(&format!("/environments/{env}/versions"), both)
        .await;
    assert_eq!(
        (
            status,
            v2["version_number"].as_i64(),
            v2["resource_profile"].as_str()
        ),
        (200, Some(2), Some("large"))
    );
    let alone = json!({"source_digest": format!("sha256:{}", "a".repeat(64))});
    assert_eq!(
        boss.post(&format!("/environments/{env}/versions"), alone)
            .await
            .0,
        200,
        "a digest alone passes the format check"
    );

    let (_, seen) = member
        .get(&format!(
            "/environments/{env}/versions/{}",
            v1["id"].as_str().unwrap()
        ))
        .await;
    assert_eq!(seen["id"], v1["id"]);
    assert!(
        seen.get("source_digest").is_none() && seen.get("source_ref").is_none(),
        "owner-only fields: {seen}"
    );
    let (_, list) = member.get(&format!("/environments/{env}/versions")).await;
    let numbers: Vec<i64> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v["version_number"].as_i64().unwrap())
        .collect();
    assert_eq!(numbers, vec![3, 2, 1]);
}

#[tokio::test]
async fn version_requests_are_validated() {
    let app = TestApp::spawn().await;
    let (_, boss, _, member) = callers(&app).await;
    let env = boss.environment("py").await;
    let other = boss.environment("other").await;
    let (_, completed) = boss.upload(&other, busybox_context("", &[])).await;
    let path = format!("/environments/{env}/versions");
    assert_validation(
        &boss.post(&path, json!({})).await,
        "missing",
        &["body", "owned_object_id"],
    );
    let pattern = boss
        .post(&path, json!({"source_digest": "sha256:XYZ"}))
        .await;
    assert_validation(
        &pattern,
        "string_pattern_mismatch",
        &["body", "source_digest"],
    );
    let xlarge = boss.post(&path, json!({"source_digest": format!("sha256:{}", "0".repeat(64)), "resource_profile": "xlarge"})).await;
    assert_validation(&xlarge, "enum", &["body", "resource_profile"]);
    let elsewhere = boss
        .post(
            &path,
            json!({"owned_object_id": completed["owned_object_id"]}),
        )
        .await;
    assert_validation(&elsewhere, "value_error", &["body", "owned_object_id"]);
    let (_, own) = boss.upload(&env, busybox_context("", &[])).await;
    let mismatch = json!({"owned_object_id": own["owned_object_id"], "source_digest": format!("sha256:{}", "1".repeat(64))});
    assert_validation(
        &boss.post(&path, mismatch).await,
        "value_error",
        &["body", "owned_object_id"],
    );
    assert_eq!(
        member
            .post(&path, json!({"owned_object_id": own["owned_object_id"]}))
            .await
            .0,
        404
    );
}

#[tokio::test]
async fn the_capacity_retained_limit_refuses_new_versions() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    app.set_limits(seed.company("acme"), |l| {
        l.capacity_retained_version_limit = 1
    })
    .await;
    let env = boss.environment("py").await;
    let digest = json!({"source_digest": format!("sha256:{}", "a".repeat(64))});
    let (_, first) = boss
        .post(&format!("/environments/{env}/versions"), digest.clone())
        .await;
    let refused = boss
        .post(&format!("/environments/{env}/versions"), digest.clone())
        .await;
    let detail = assert_code(&refused, 409, "version_allocation_exhausted");
    assert_eq!(detail["limit"], 1);
    let id = first["id"].as_str().unwrap();
    let (status, archived) = boss
        .post(
            &format!("/environments/{env}/versions/{id}/archive"),
            json!({}),
        )
        .await;
    assert_eq!(
        (
            status,
            archived["state"].as_str(),
            archived["capacity_retained"].as_bool()
        ),
        (200, Some("archived"), Some(false))
    );
    assert_code(
        &boss
            .post(
                &format!("/environments/{env}/versions/{id}/archive"),
                json!({}),
            )
            .await,
        409,
        "already_archived",
    );
    assert_eq!(
        boss.post(&format!("/environments/{env}/versions"), digest)
            .await
            .0,
        200
    );
}
