//! Task create, read, update and archive.

use super::company_task;
use crate::environments::{Caller, callers};
use crate::support::{TestApp, assert_code, assert_validation};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn owner_scopes_decide_who_may_create_a_task() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let rnd = seed.department("acme", "rnd").to_string();
    let ops = seed.department("acme", "ops").to_string();
    let (status, task) = boss
        .post(
            "/tasks",
            json!({"name": "report", "owner_scope": "company", "agent_enabled": true}),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    assert_eq!(task["owner_id"], seed.company("acme").to_string());
    assert_eq!(task["lifecycle"], "active");
    assert_eq!(task["agent_enabled"], true);
    assert_eq!(task["version_count"], 0);
    let (status, task) = dm
        .post(
            "/tasks",
            json!({"name": "lab job", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    assert_eq!(status, 200, "{task}");
    assert_eq!(task["owner_scope"], "department");
    assert_eq!(task["agent_enabled"], false);
    for (caller, body) in [
        (&dm, json!({"name": "x", "owner_scope": "company"})),
        (
            &dm,
            json!({"name": "x", "owner_scope": "department", "owner_id": ops}),
        ),
        (&member, json!({"name": "x", "owner_scope": "company"})),
        (
            &member,
            json!({"name": "x", "owner_scope": "department", "owner_id": rnd}),
        ),
        (
            &boss,
            json!({"name": "x", "owner_scope": "company", "owner_id": seed.company("globex")}),
        ),
    ] {
        assert_code(
            &caller.post("/tasks", body).await,
            403,
            "owner_scope_forbidden",
        );
    }
    let chatroom = boss
        .post(
            "/tasks",
            json!({"name": "x", "owner_scope": "chatroom", "owner_id": seed.room("acme", "lab")}),
        )
        .await;
    assert_eq!(chatroom.0, 422, "{}", chatroom.1);
    // The legacy chatroom catalog create (a room named beside the enum).
    assert_code(
        &boss
            .post(
                "/tasks",
                json!({"name": "x", "owner_scope": "company", "chatroom_id": seed.room("acme", "lab")}),
            )
            .await,
        403,
        "chatroom_owner_scope_removed",
    );
    assert_validation(
        &boss
            .post("/tasks", json!({"name": "", "owner_scope": "company"}))
            .await,
        "too_short",
        &["body", "name"],
    );
    assert_validation(
        &boss
            .post(
                "/tasks",
                json!({"name": "x", "owner_scope": "company", "description": "d".repeat(2049)}),
            )
            .await,
        "too_long",
        &["body", "description"],
    );
    let unknown = boss
        .post(
            "/tasks",
            json!({"name": "x", "owner_scope": "company", "color": "red"}),
        )
        .await;
    assert_eq!(unknown.0, 422, "{}", unknown.1);
    let (_, list) = member.get("/tasks").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn patch_archive_lifecycle_and_tenancy() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let task = company_task(&boss, "report").await;
    let path = format!("/tasks/{task}");
    let (status, patched) = boss
        .send(
            Method::PATCH,
            &path,
            Some(json!({"name": "weekly report", "agent_enabled": true})),
        )
        .await;
    assert_eq!(status, 200, "{patched}");
    assert_eq!(patched["name"], "weekly report");
    assert_eq!(patched["agent_enabled"], true);
    assert_code(
        &boss.send(Method::PATCH, &path, Some(json!({}))).await,
        422,
        "no_fields",
    );
    let immutable = boss
        .send(
            Method::PATCH,
            &path,
            Some(json!({"owner_scope": "department"})),
        )
        .await;
    assert_eq!(immutable.0, 422, "{}", immutable.1);
    assert_eq!(
        member
            .send(Method::PATCH, &path, Some(json!({"name": "mine"})))
            .await
            .0,
        404
    );
    assert_eq!(member.get(&path).await.0, 200);
    let globex = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    assert_eq!(globex.get(&path).await.0, 404);
    assert!(
        globex.get("/tasks").await.1["items"]
            .as_array()
            .unwrap()
            .is_empty()
    );

    let (status, archived) = boss.post(&format!("{path}/archive"), json!({})).await;
    assert_eq!(status, 200, "{archived}");
    assert_eq!(archived["lifecycle"], "archived");
    assert_code(
        &boss.post(&format!("{path}/archive"), json!({})).await,
        409,
        "already_archived",
    );
    assert_code(
        &boss
            .send(Method::PATCH, &path, Some(json!({"name": "again"})))
            .await,
        409,
        "task_archived",
    );
    let other = company_task(&boss, "other").await;
    let (_, active) = boss.get("/tasks").await;
    let ids: Vec<&str> = active["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, [other.as_str()]);
    let (_, all) = boss.get("/tasks?lifecycle=all").await;
    assert_eq!(all["items"].as_array().unwrap().len(), 2);
    let (_, retired) = boss.get("/tasks?lifecycle=retired").await;
    assert_eq!(retired["items"][0]["id"], task.as_str());
    let (_, page) = boss.get("/tasks?lifecycle=all&page_size=1").await;
    assert_eq!(page["items"].as_array().unwrap().len(), 1);
    let token = page["next_page_token"].as_str().unwrap();
    let (_, next) = boss
        .get(&format!(
            "/tasks?lifecycle=all&page_size=1&page_token={token}"
        ))
        .await;
    assert_eq!(next["items"][0]["id"], task.as_str());
}
