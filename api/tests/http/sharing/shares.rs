//! Share grants: validation, targets, owners only, one live grant per target (also
//! under concurrent requests), revoke and the list's default lifecycle.

use super::published_task;
use crate::environments::callers;
use crate::support::{TestApp, assert_code, assert_validation};
use crate::tasks::{company_task, ready_environment_version};
use serde_json::{Value, json};

#[tokio::test]
async fn shares_are_validated_owned_and_live_once_per_target() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let ready = ready_environment_version(&boss).await;
    let (task, _) = published_task(&boss, "shared", &ready).await;
    let shares = format!("/tasks/{task}/shares");
    let to_lab = json!({"target_kind": "chatroom", "target_id": lab});

    // Bad requests change nothing.
    for policies in [
        json!({"1bad": "owner"}),
        json!({"API_TOKEN": "everyone"}),
        json!(["owner"]),
        Value::Object(
            (0..101)
                .map(|i| (format!("S{i}"), json!("owner")))
                .collect(),
        ),
    ] {
        let body =
            json!({"target_kind": "chatroom", "target_id": lab, "secret_slot_policies": policies});
        let detail = assert_code(
            &boss.post(&shares, body).await,
            422,
            "secret_slot_policies_invalid",
        );
        assert!(!detail["errors"].as_array().unwrap().is_empty());
    }
    assert_validation(
        &boss
            .post(&shares, json!({"target_kind": "user", "target_id": lab}))
            .await,
        "enum",
        &["body", "target_kind"],
    );
    assert_validation(
        &boss
            .post(
                &shares,
                json!({"target_kind": "chatroom", "target_id": lab, "extra": 1}),
            )
            .await,
        "extra_forbidden",
        &["body", "extra"],
    );
    // Targets must be live and of the same company.
    let hq = seed.room("globex", "hq");
    assert_eq!(
        boss.post(&shares, json!({"target_kind": "chatroom", "target_id": hq}))
            .await
            .0,
        404
    );
    assert_eq!(
        boss.post(
            &shares,
            json!({"target_kind": "company", "target_id": seed.company("globex")})
        )
        .await
        .0,
        404
    );
    assert_eq!(
        boss.post(
            &shares,
            json!({"target_kind": "department", "target_id": lab})
        )
        .await
        .0,
        404
    );
    // Only owners share; borrowers do not even see the grants.
    assert_eq!(member.post(&shares, to_lab.clone()).await.0, 404);
    assert_eq!(dm.post(&shares, to_lab.clone()).await.0, 404);
    assert_eq!(member.get(&shares).await.0, 404);
    assert_eq!(boss.get(&shares).await.1["items"], json!([]));

    // A task without a published version cannot be shared.
    let unpublished = company_task(&boss, "draft only").await;
    assert_code(
        &boss
            .post(&format!("/tasks/{unpublished}/shares"), to_lab.clone())
            .await,
        409,
        "version_not_runnable",
    );

    // Concurrent grants of the same target: exactly one wins.
    let attempts =
        futures::future::join_all((0..6).map(|_| boss.post(&shares, to_lab.clone()))).await;
    let won: Vec<&(u16, Value)> = attempts.iter().filter(|(s, _)| *s == 200).collect();
    assert_eq!(won.len(), 1, "{attempts:?}");
    for (status, body) in attempts.iter().filter(|(s, _)| *s != 200) {
        assert_eq!(
            (*status, body["detail"]["code"].as_str()),
            (409, Some("share_already_live")),
            "{body}"
        );
    }
    let first = won[0].1.clone();
    assert_eq!(first["secret_slot_policies"], json!({}));
    assert_code(
        &boss.post(&shares, to_lab.clone()).await,
        409,
        "share_already_live",
    );

    // Revoke, then reshare: a new generation with a new id.
    let revoke = format!("{shares}/{}/revoke", first["id"].as_str().unwrap());
    assert_validation(
        &boss.post(&revoke, json!({"reason": "x".repeat(513)})).await,
        "too_long",
        &["body", "reason"],
    );
    assert_eq!(member.post(&revoke, json!({})).await.0, 404);
    let (status, revoked) = boss.post(&revoke, json!({})).await;
    assert_eq!(status, 200, "{revoked}");
    assert_eq!(revoked["state"], "revoked");
    assert_code(
        &boss.post(&revoke, json!({})).await,
        409,
        "illegal_state_transition",
    );
    let (status, second) = boss.post(&shares, to_lab.clone()).await;
    assert_eq!(status, 200, "{second}");
    assert_eq!(second["generation"], 2);
    assert_ne!(second["id"], first["id"]);
    assert_eq!(
        boss.post(
            &format!("{shares}/{}/revoke", uuid::Uuid::new_v4()),
            json!({})
        )
        .await
        .0,
        404
    );

    // The list defaults to every lifecycle, newest first.
    let (_, all) = boss.get(&shares).await;
    let ids: Vec<&Value> = all["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| &g["id"])
        .collect();
    assert_eq!(ids, [&second["id"], &first["id"]]);
    let (_, active) = boss.get(&format!("{shares}?lifecycle=active")).await;
    assert_eq!(active["items"].as_array().unwrap().len(), 1);
    let (_, retired) = boss
        .get(&format!("{shares}?lifecycle=retired&page_size=1"))
        .await;
    assert_eq!(retired["items"][0]["id"], first["id"]);

    // An archived task cannot be shared.
    assert_eq!(
        boss.post(&format!("/tasks/{task}/archive"), json!({}))
            .await
            .0,
        200
    );
    assert_code(
        &boss
            .post(
                &shares,
                json!({"target_kind": "company", "target_id": seed.company("acme")}),
            )
            .await,
        409,
        "task_archived",
    );
}

#[tokio::test]
async fn department_tasks_reach_any_room_and_the_room_grant_resolves_first() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, _) = callers(&app).await;
    let lab = seed.room("acme", "lab");
    let ops_room = seed.room("acme", "ops-room");
    let rnd = seed.department("acme", "rnd");
    let ready = ready_environment_version(&boss).await;
    let (status, task) = dm
        .post(
            "/tasks",
            json!({"name": "rnd job", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    let task = task["id"].as_str().unwrap().to_string();
    super::publish(&dm, &task, &ready).await;
    let shares = format!("/tasks/{task}/shares");

    // A department task goes straight to another department's room.
    let (status, _) = dm
        .post(
            &shares,
            json!({"target_kind": "chatroom", "target_id": ops_room}),
        )
        .await;
    assert_eq!(status, 200);
    let (status, item) = boss
        .post(
            &format!("/chatrooms/{ops_room}/granted-jobs/{task}/enable"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{item}");
    assert_eq!(item["share_target_kind"], "chatroom");

    // Room, then department, then company.
    for body in [
        json!({"target_kind": "company", "target_id": seed.company("acme")}),
        json!({"target_kind": "department", "target_id": rnd, "secret_slot_policies": {"API_TOKEN": "owner_overridable"}}),
    ] {
        assert_eq!(dm.post(&shares, body).await.0, 200);
    }
    let (_, jobs) = dm.get(&format!("/chatrooms/{lab}/granted-jobs")).await;
    assert_eq!(
        jobs["items"][0]["share_target_kind"], "department",
        "{jobs}"
    );
    assert_eq!(
        jobs["items"][0]["secret_slots"][0]["policy"],
        "owner_overridable"
    );
    let (status, _) = dm
        .post(
            &shares,
            json!({"target_kind": "chatroom", "target_id": lab}),
        )
        .await;
    assert_eq!(status, 200);
    let (_, jobs) = dm.get(&format!("/chatrooms/{lab}/granted-jobs")).await;
    assert_eq!(jobs["items"][0]["share_target_kind"], "chatroom", "{jobs}");
    assert_eq!(jobs["items"][0]["secret_slots"][0]["policy"], "borrower");
    let (_, jobs) = boss
        .get(&format!("/chatrooms/{ops_room}/granted-jobs"))
        .await;
    assert_eq!(jobs["items"][0]["share_target_kind"], "chatroom");
    assert_eq!(jobs["items"][0]["enabled"], true);
    let (_, retired) = boss
        .get(&format!("/chatrooms/{ops_room}/bindings?lifecycle=retired"))
        .await;
    assert_eq!(retired["items"], json!([]));

    // The task's owner reads the binding in a room it does not manage, but the room
    // manager decides: 403 for a re-pin or a revoke.
    let binding = jobs["items"][0]["binding_id"].as_str().unwrap();
    assert_eq!(dm.get(&format!("/bindings/{binding}")).await.0, 200);
    let version = jobs["items"][0]["task_version_id"].clone();
    assert_eq!(
        dm.post(
            &format!("/bindings/{binding}/accept-version"),
            json!({"task_version_id": version})
        )
        .await
        .0,
        403
    );
    assert_eq!(
        dm.post(&format!("/bindings/{binding}/revoke"), json!({}))
            .await
            .0,
        403
    );
    let (_, history) = dm
        .get(&format!("/tasks/{task}/bindings?lifecycle=retired"))
        .await;
    assert_eq!(history["items"], json!([]));
}
