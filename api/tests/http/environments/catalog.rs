//! `/environments`: create, list, get, patch, archive, owner scopes and the
//! active-environment limit.

use super::{Caller, callers};
use crate::support::{TestApp, assert_code, assert_validation};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn owner_scopes_decide_who_may_create() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, member) = callers(&app).await;
    let rnd = seed.department("acme", "rnd").to_string();
    let ops = seed.department("acme", "ops").to_string();

    let (status, env) = boss
        .post(
            "/environments",
            json!({"name": "py", "description": "python"}),
        )
        .await;
    assert_eq!(status, 200, "{env}");
    assert_eq!(
        (env["owner_kind"].as_str(), env["owner_scope"].as_str()),
        (Some("company"), Some("company"))
    );
    assert_eq!(env["owner_id"], seed.company("acme").to_string());
    assert_eq!(env["lifecycle"], "active");
    assert_eq!(env["security_state"], "clear");

    let (status, env) = dm
        .post(
            "/environments",
            json!({"name": "lab", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    assert_eq!(status, 200, "{env}");
    assert_eq!(env["owner_scope"], "department");
    assert_code(
        &dm.post("/environments", json!({"name": "x"})).await,
        403,
        "owner_scope_forbidden",
    );
    let other = dm
        .post(
            "/environments",
            json!({"name": "x", "owner_scope": "department", "owner_id": ops}),
        )
        .await;
    assert_code(&other, 403, "owner_scope_forbidden");
    assert_code(
        &member.post("/environments", json!({"name": "x"})).await,
        403,
        "owner_scope_forbidden",
    );
}

#[tokio::test]
async fn create_validates_the_body() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let before = app.event_count().await;
    assert_validation(
        &boss.post("/environments", json!({"name": ""})).await,
        "too_short",
        &["body", "name"],
    );
    assert_validation(
        &boss
            .post("/environments", json!({"name": "x".repeat(257)}))
            .await,
        "too_long",
        &["body", "name"],
    );
    let long = json!({"name": "x", "description": "d".repeat(2049)});
    assert_validation(
        &boss.post("/environments", long).await,
        "too_long",
        &["body", "description"],
    );
    let chatroom = boss
        .post(
            "/environments",
            json!({"name": "x", "owner_scope": "chatroom"}),
        )
        .await;
    assert_validation(&chatroom, "enum", &["body", "owner_scope"]);
    let unknown = boss
        .post("/environments", json!({"name": "x", "color": "red"}))
        .await;
    assert_validation(&unknown, "extra_forbidden", &["body", "color"]);
    let missing = boss
        .post(
            "/environments",
            json!({"name": "x", "owner_scope": "department"}),
        )
        .await;
    assert_validation(&missing, "missing", &["body", "owner_id"]);
    // The read models cannot store NUL: such a text would stop them for everyone.
    let nul = boss.post("/environments", json!({"name": "a\u{0}b"})).await;
    assert_validation(&nul, "value_error", &["body"]);
    assert_eq!(
        app.event_count().await,
        before,
        "refused creates change nothing"
    );
    let (status, env) = boss.post("/environments", json!({"name": "ab"})).await;
    assert_eq!(status, 200, "{env}");
}

#[tokio::test]
async fn members_read_managers_change_and_other_companies_see_nothing() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let globex = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    let id = boss.environment("py").await;
    assert_eq!(member.get(&format!("/environments/{id}")).await.0, 200);
    assert_eq!(
        member
            .send(
                Method::PATCH,
                &format!("/environments/{id}"),
                Some(json!({"name": "y"}))
            )
            .await
            .0,
        404
    );
    assert_eq!(
        member
            .post(&format!("/environments/{id}/archive"), json!({}))
            .await
            .0,
        404
    );
    assert_eq!(globex.get(&format!("/environments/{id}")).await.0, 404);
    let (_, list) = globex.get("/environments").await;
    assert!(list["items"].as_array().unwrap().is_empty());
}

#[tokio::test]
async fn patch_archive_and_lifecycle_filters() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let id = boss.environment("py").await;
    let keep = boss.environment("keep").await;
    let (status, patched) = boss
        .send(
            Method::PATCH,
            &format!("/environments/{id}"),
            Some(json!({"name": "py3"})),
        )
        .await;
    assert_eq!((status, patched["name"].as_str()), (200, Some("py3")));
    let empty = boss
        .send(
            Method::PATCH,
            &format!("/environments/{id}"),
            Some(json!({})),
        )
        .await;
    assert_code(&empty, 422, "no_fields");
    let (status, archived) = boss
        .post(&format!("/environments/{id}/archive"), json!({}))
        .await;
    assert_eq!(
        (status, archived["lifecycle"].as_str()),
        (200, Some("archived"))
    );
    assert_code(
        &boss
            .post(&format!("/environments/{id}/archive"), json!({}))
            .await,
        409,
        "already_archived",
    );
    let patch = boss
        .send(
            Method::PATCH,
            &format!("/environments/{id}"),
            Some(json!({"name": "z"})),
        )
        .await;
    assert_code(&patch, 409, "environment_archived");

    let ids = |body: &serde_json::Value| -> Vec<String> {
        body["items"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["id"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(ids(&boss.get("/environments").await.1), vec![keep.clone()]);
    assert_eq!(
        ids(&boss.get("/environments?lifecycle=retired").await.1),
        vec![id.clone()]
    );
    assert_eq!(
        ids(&boss.get("/environments?lifecycle=all").await.1),
        vec![keep.clone(), id.clone()]
    );
    let (_, first) = boss.get("/environments?lifecycle=all&page_size=1").await;
    assert_eq!(ids(&first), vec![keep]);
    let token = first["next_page_token"].as_str().unwrap();
    let (_, second) = boss
        .get(&format!(
            "/environments?lifecycle=all&page_size=1&page_token={token}"
        ))
        .await;
    assert_eq!(ids(&second), vec![id]);
    assert!(second["next_page_token"].is_null());
}

#[tokio::test]
async fn the_active_environment_limit_holds_under_concurrent_creates() {
    let app = TestApp::spawn().await;
    let (seed, boss, dm, _) = callers(&app).await;
    app.set_limits(seed.company("acme"), |l| l.active_environment_limit = 3)
        .await;
    boss.environment("one").await;
    let rnd = seed.department("acme", "rnd").to_string();
    let dept = dm
        .post(
            "/environments",
            json!({"name": "two", "owner_scope": "department", "owner_id": rnd}),
        )
        .await;
    assert_eq!(dept.0, 200, "department environments count too");
    let attempts = (0..5).map(|i| boss.post("/environments", json!({"name": format!("race-{i}")})));
    let results = futures::future::join_all(attempts).await;
    assert_eq!(
        results.iter().filter(|r| r.0 == 200).count(),
        1,
        "{results:?}"
    );
    for refused in results.iter().filter(|r| r.0 != 200) {
        let detail = assert_code(refused, 409, "active_environment_limit");
        assert_eq!(detail["limit"], 3);
    }
    let (_, list) = boss.get("/environments").await;
    assert_eq!(list["items"].as_array().unwrap().len(), 3);
    let first = list["items"][0]["id"].as_str().unwrap();
    boss.post(&format!("/environments/{first}/archive"), json!({}))
        .await;
    assert_eq!(
        boss.post("/environments", json!({"name": "after-archive"}))
            .await
            .0,
        200
    );
}
