//! Exact-version approvals: validation, 409 `task_version_not_published` before
//! 409 `task_version_digest_mismatch`, the alias routes, supersession, revocation
//! and the task's approval list.

use super::{public_key, rust_seal, secret_post, write_body};
use crate::environments::callers;
use crate::runs::{runnable, submit};
use crate::sharing::publish;
use crate::support::TestApp;
use crate::tasks::{company_task, draft, ready_environment_version};
use serde_json::{Value, json};

#[tokio::test]
async fn approvals_pin_a_published_digest_and_can_be_revoked() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let task = company_task(&boss, "job").await;
    let published = publish(&boss, &task, &ready).await;
    let version = published["id"].as_str().unwrap();
    let digest = published["canonical_digest"].as_str().unwrap();
    let (_, unpublished) = draft(&boss, &task, json!({"environment_version_id": ready})).await;
    let body = |version: &str, digest: &str, slots: Value| {
        json!({"consumer_scope": "chatroom", "consumer_id": lab, "task_id": task,
               "task_version_id": version, "task_version_digest": digest,
               "slot_names": slots, "risk_accepted": true})
    };
    let before = app.event_count().await;

    let mut not_accepted = body(version, digest, json!(["API_TOKEN"]));
    not_accepted["risk_accepted"] = json!(false);
    assert_eq!(dm.post("/secret-approvals", not_accepted).await.0, 422);
    assert_eq!(
        dm.post("/secret-approvals", body(version, digest, json!([])))
            .await
            .0,
        422
    );
    assert_eq!(
        dm.post(
            "/secret-approvals",
            body(version, digest, json!(["A", "A"]))
        )
        .await
        .0,
        422
    );
    assert_eq!(
        dm.post(
            "/secret-approvals",
            body(version, "sha256:xyz", json!(["A"]))
        )
        .await
        .0,
        422
    );
    let upper = format!("sha256:{}", "A".repeat(64));
    let (status, refused) = dm
        .post("/secret-approvals", body(version, &upper, json!(["A"])))
        .await;
    assert_eq!(status, 422, "the digest is lowercase hex: {refused}");
    let wrong = format!("sha256:{}", "0".repeat(64));
    let draft_id = unpublished["id"].as_str().unwrap();
    let (status, refused) = dm
        .post(
            "/secret-approvals",
            body(draft_id, &wrong, json!(["API_TOKEN"])),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(refused["detail"]["code"], "task_version_not_published");
    let (status, refused) = dm
        .post(
            "/secret-approvals",
            body(version, &wrong, json!(["API_TOKEN"])),
        )
        .await;
    assert_eq!(status, 409);
    assert_eq!(refused["detail"]["code"], "task_version_digest_mismatch");
    let (status, _) = member
        .post(
            "/secret-approvals",
            body(version, digest, json!(["API_TOKEN"])),
        )
        .await;
    assert_eq!(status, 403, "members do not manage the room");
    assert_eq!(app.event_count().await, before, "refusals record nothing");

    let (status, approval) = dm
        .post(
            "/secret-approvals",
            body(version, digest, json!(["DB_PASSWORD", "API_TOKEN"])),
        )
        .await;
    assert_eq!(status, 200, "{approval}");
    assert_eq!(approval["state"], "active");
    assert_eq!(approval["source"], "explicit");
    assert_eq!(approval["slot_names"], json!(["API_TOKEN", "DB_PASSWORD"]));
    let first = approval["id"].as_str().unwrap().to_string();

    // The alias approves too; another slot set supersedes the first approval.
    let (status, second) = dm
        .post(
            "/shared-task-secret-approvals",
            body(version, digest, json!(["API_TOKEN"])),
        )
        .await;
    assert_eq!(status, 200, "{second}");
    assert_ne!(second["id"], first.as_str());
    let (_, listed) = boss.get(&format!("/tasks/{task}/secret-approvals")).await;
    let items = listed["items"].as_array().unwrap();
    assert_eq!(items.len(), 2);
    assert_eq!(items[1]["revoke_reason"], "superseded");
    assert_eq!(items[1]["state"], "revoked");
    let (_, none) = member.get(&format!("/tasks/{task}/secret-approvals")).await;
    assert_eq!(none["items"], json!([]));

    let second_id = second["id"].as_str().unwrap();
    let (status, revoked) = dm
        .post(
            &format!("/shared-task-secret-approvals/{second_id}/revoke"),
            json!({"reason": "vendor changed"}),
        )
        .await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["state"], "revoked");
    assert_eq!(revoked["revoke_reason"], "vendor changed");
    let (status, _) = dm
        .post(&format!("/secret-approvals/{second_id}/revoke"), json!({}))
        .await;
    assert_eq!(status, 409, "an approval is revoked once");
    let (status, _) = member
        .post(&format!("/secret-approvals/{first}/revoke"), json!({}))
        .await;
    assert_eq!(status, 403);
}

/// Ordinary plus secret environment stays under 256 KiB: four 64 KiB values are
/// refused at submission, and nothing is queued.
#[tokio::test]
async fn a_run_whose_secrets_exceed_the_environment_limit_is_refused() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let company = seed.company("acme").to_string();
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let slots = ["S1", "S2", "S3", "S4"];
    let (task, version) = runnable(
        &boss,
        &ready,
        "true\n",
        json!({"secret_slot_declarations": slots}),
    )
    .await;
    let pem = public_key(&app).await;
    for slot in slots {
        let sealed = rust_seal(&pem, &[b'v'; 64 * 1024]);
        let body = write_body("company", &company, &task, slot, sealed);
        let (status, written) = secret_post(&boss, "/secrets", slot, body).await;
        assert_eq!(status, 200, "{written}");
    }
    let (status, refused) = submit(
        &member,
        &lab,
        "wide",
        json!({"task_version_id": version, "input": {}}),
    )
    .await;
    assert_eq!(status, 422, "{refused}");
    let (_, runs) = member.get(&format!("/chatrooms/{lab}/runs")).await;
    assert_eq!(runs["items"], json!([]));
}
