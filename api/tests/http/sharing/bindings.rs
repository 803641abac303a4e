//! `/bindings`: create, read, accept-version, revoke; the adoption history of a
//! task; archiving a task or a pinned version.

use super::{publish, published_task};
use crate::environments::{Caller, callers};
use crate::support::{TestApp, assert_code, assert_validation};
use crate::tasks::ready_environment_version;
use serde_json::json;

#[tokio::test]
async fn bindings_pin_exact_versions_and_follow_their_task() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let outsider = Caller {
        app: &app,
        token: seed.token("acme", "outsider"),
    };
    let lab = seed.room("acme", "lab");
    let ops_room = seed.room("acme", "ops-room");
    let ready = ready_environment_version(&boss).await;
    let (task, v1) = published_task(&boss, "pinned", &ready).await;
    let create = json!({"chatroom_id": lab, "task_id": task, "task_version_id": v1});

    // Not shared yet.
    assert_code(
        &dm.post("/bindings", create.clone()).await,
        409,
        "task_not_shared_to_room",
    );
    let (status, _) = boss
        .post(
            &format!("/tasks/{task}/shares"),
            json!({"target_kind": "chatroom", "target_id": lab}),
        )
        .await;
    assert_eq!(status, 200);

    // Room managers create; members get 403, strangers to the room 404.
    assert_eq!(member.post("/bindings", create.clone()).await.0, 403);
    assert_eq!(outsider.post("/bindings", create.clone()).await.0, 404);
    assert_validation(
        &dm.post("/bindings", json!({"chatroom_id": lab, "task_id": task}))
            .await,
        "missing",
        &["body", "task_version_id"],
    );
    let missing_version =
        json!({"chatroom_id": lab, "task_id": task, "task_version_id": uuid::Uuid::new_v4()});
    assert_eq!(dm.post("/bindings", missing_version).await.0, 404);
    let (status, binding) = dm.post("/bindings", create.clone()).await;
    assert_eq!(status, 200, "{binding}");
    assert_eq!(binding["state"], "enabled");
    assert_eq!(binding["task_version_id"], v1.as_str());
    assert_eq!(binding["update_available"], false);
    assert_eq!(binding["generation"], 1);
    assert_code(
        &dm.post("/bindings", create.clone()).await,
        409,
        "binding_already_live",
    );
    let id = binding["id"].as_str().unwrap().to_string();
    let path = format!("/bindings/{id}");

    // Room managers and the task's owners read it; nobody else.
    assert_eq!(dm.get(&path).await, (200, binding.clone()));
    assert_eq!(boss.get(&path).await.0, 200);
    assert_eq!(member.get(&path).await.0, 404);
    assert_eq!(outsider.get(&path).await.0, 404);

    // A newer version shows as an update; accept-version re-pins.
    let v2 = publish(&boss, &task, &ready).await;
    let v2 = v2["id"].as_str().unwrap();
    assert_eq!(dm.get(&path).await.1["update_available"], true);
    let accept = format!("{path}/accept-version");
    assert_eq!(
        member.post(&accept, json!({"task_version_id": v2})).await.0,
        404
    );
    assert_eq!(
        dm.post(&accept, json!({"task_version_id": uuid::Uuid::new_v4()}))
            .await
            .0,
        404
    );
    let (status, accepted) = dm.post(&accept, json!({"task_version_id": v2})).await;
    assert_eq!(status, 200, "{accepted}");
    assert_eq!(accepted["id"], id.as_str());
    assert_eq!(accepted["task_version_id"], v2);
    assert_eq!(accepted["version_number"], 2);
    assert_eq!(accepted["update_available"], false);

    // Archiving the pinned version takes the binding off the menu without revoking it.
    let menu = format!("/chatrooms/{lab}/menu");
    assert_eq!(
        member.get(&menu).await.1["items"].as_array().unwrap().len(),
        1
    );
    let (status, _) = boss
        .post(&format!("/tasks/{task}/versions/{v2}/archive"), json!({}))
        .await;
    assert_eq!(status, 200);
    let (_, after) = dm.get(&path).await;
    assert_eq!(
        (
            after["state"].as_str(),
            after["authority_applicable"].as_bool()
        ),
        (Some("enabled"), Some(false))
    );
    assert_eq!(member.get(&menu).await.1["items"], json!([]));
    assert_code(
        &dm.post(&accept, json!({"task_version_id": v2})).await,
        409,
        "version_not_runnable",
    );
    // A draft: its owner hears why it cannot be pinned; a room manager does not see it.
    let fields = json!({"environment_version_id": ready, "startup_script": "",
                        "work_script": "echo draft\n", "timeout_seconds": 60});
    let (status, draft) = boss.post(&format!("/tasks/{task}/versions"), fields).await;
    assert_eq!(status, 200, "{draft}");
    let on_draft = json!({"task_version_id": draft["id"]});
    assert_code(
        &boss.post(&accept, on_draft.clone()).await,
        409,
        "version_not_runnable",
    );
    assert_eq!(dm.post(&accept, on_draft).await.0, 404);
    let (status, back) = dm.post(&accept, json!({"task_version_id": v1})).await;
    assert_eq!(status, 200, "{back}");
    assert_eq!(back["authority_applicable"], true);

    // The adoption history: owners see every room, a room manager only its rooms.
    let (status, _) = boss
        .post(
            &format!("/tasks/{task}/shares"),
            json!({"target_kind": "chatroom", "target_id": ops_room}),
        )
        .await;
    assert_eq!(status, 200);
    let ops_binding = json!({"chatroom_id": ops_room, "task_id": task, "task_version_id": v1});
    assert_eq!(boss.post("/bindings", ops_binding).await.0, 200);
    let history = format!("/tasks/{task}/bindings");
    assert_eq!(
        boss.get(&history).await.1["items"]
            .as_array()
            .unwrap()
            .len(),
        2
    );
    let (status, mine) = dm.get(&history).await;
    assert_eq!(status, 200, "{mine}");
    assert_eq!(mine["items"].as_array().unwrap().len(), 1);
    assert_eq!(mine["items"][0]["chatroom_id"], lab.to_string());
    assert_eq!(mine["truncated"], false);
    assert_eq!(member.get(&history).await.1["items"], json!([]));
    assert_eq!(
        member.get(&format!("/chatrooms/{lab}/bindings")).await.0,
        403
    );

    // Revoke: the share stays, a second revoke or an accept is refused.
    let revoke = format!("{path}/revoke");
    assert_eq!(member.post(&revoke, json!({})).await.0, 404);
    let (status, revoked) = dm.post(&revoke, json!({"reason": "not needed"})).await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["state"], "revoked");
    assert_eq!(revoked["revoke_reason"], "not needed");
    assert_code(
        &dm.post(&revoke, json!({})).await,
        409,
        "illegal_state_transition",
    );
    assert_code(
        &dm.post(&accept, json!({"task_version_id": v1})).await,
        409,
        "illegal_state_transition",
    );
    let (status, again) = dm.post("/bindings", create).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["generation"], 2);

    // Archiving the task revokes every binding it has.
    assert_eq!(
        boss.post(&format!("/tasks/{task}/archive"), json!({}))
            .await
            .0,
        200
    );
    let (_, all) = boss.get(&format!("{history}?lifecycle=all")).await;
    assert!(
        all["items"]
            .as_array()
            .unwrap()
            .iter()
            .all(|b| b["state"] == "revoked"),
        "{all}"
    );
    assert_eq!(boss.get(&history).await.1["items"], json!([]));
    assert_eq!(member.get(&menu).await.1["items"], json!([]));
    assert_code(
        &dm.post(
            &format!("/chatrooms/{lab}/granted-jobs/{task}/enable"),
            json!({}),
        )
        .await,
        409,
        "task_archived",
    );
}
