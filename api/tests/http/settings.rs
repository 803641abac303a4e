//! `GET/PUT /settings` (spec section 2, "Company settings").

use crate::support::{As, Options, TestApp, assert_code, assert_validation, json};
use domain::catalog::Provider;
use reqwest::Method;
use serde_json::{Value, json};

const SETTINGS: &str = "/private/module/sandbox/settings";

async fn get(app: &TestApp, token: &str) -> (u16, Value) {
    json(
        app.request(Method::GET, SETTINGS)
            .bearer_token(token)
            .send()
            .await
            .unwrap(),
    )
    .await
}

async fn put(app: &TestApp, token: &str, body: Value) -> (u16, Value) {
    json(
        app.request(Method::PUT, SETTINGS)
            .bearer_token(token)
            .json(&body)
            .send()
            .await
            .unwrap(),
    )
    .await
}

#[tokio::test]
async fn first_get_records_the_default_policy() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let before = app.event_count().await;
    let (status, body) = get(&app, &seed.token("acme", "boss")).await;
    assert_eq!(status, 200);
    assert_eq!(body["run_content_retention_days"], 30);
    assert_eq!(body["unreferenced_image_retention_days"], 30);
    assert_eq!(body["allowed_regions"], json!(["onprem"]));
    assert_eq!(body["selectable_regions"], json!(["onprem"]));
    assert_eq!(body["policy_version"], 1);
    assert_eq!(body["timeout_ceiling_seconds"], 86400);
    assert_eq!(body["active_environment_limit"], 30);
    assert_eq!(body["capacity_retained_version_limit"], 100);
    assert_eq!(body["placement_scope"], "runtime_execution_only");
    assert_eq!(body["residency_guaranteed"], false);
    assert_eq!(
        body["does_not_govern"],
        json!([
            "build",
            "validator",
            "registry",
            "object_storage",
            "log",
            "control_plane"
        ])
    );
    assert!(body["pricing"].is_null());
    assert_eq!(body["region_readiness"]["onprem"]["ready"], true);
    assert_eq!(
        app.event_count().await,
        before + 1,
        "the default policy is recorded once"
    );
    get(&app, &seed.token("acme", "boss")).await;
    assert_eq!(
        app.event_count().await,
        before + 1,
        "a second read records nothing"
    );
}

#[tokio::test]
async fn non_managers_get_403_insufficient_permissions() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    for user in ["dm", "member"] {
        let (status, body) = get(&app, &seed.token("acme", user)).await;
        assert_eq!(
            (status, body),
            (403, json!({"detail": "Insufficient permissions."}))
        );
        let (status, body) = put(
            &app,
            &seed.token("acme", user),
            json!({"policy_version": 1}),
        )
        .await;
        assert_eq!(
            (status, body),
            (403, json!({"detail": "Insufficient permissions."}))
        );
    }
    let social = app
        .request(Method::GET, SETTINGS)
        .api_key(&seed.key("acme", "line"))
        .send()
        .await
        .unwrap();
    assert_eq!(social.status().as_u16(), 403);
}

#[tokio::test]
async fn put_changes_the_policy_and_a_get_right_after_shows_it() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    let body = json!({"run_content_retention_days": 365, "unreferenced_image_retention_days": 1,
                      "allowed_regions": ["onprem"], "policy_version": 1});
    let (status, updated) = put(&app, &token, body).await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["policy_version"], 2);
    assert_eq!(updated["run_content_retention_days"], 365);
    let (_, read) = get(&app, &token).await;
    assert_eq!(read, updated);
    let (status, partial) = put(
        &app,
        &token,
        json!({"run_content_retention_days": 7, "policy_version": 2}),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            partial["run_content_retention_days"].clone(),
            partial["unreferenced_image_retention_days"].clone()
        ),
        (json!(7), json!(1))
    );
}

#[tokio::test]
async fn a_stale_policy_version_is_409_and_changes_nothing() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    get(&app, &token).await;
    let before = app.event_count().await;
    let got = put(
        &app,
        &token,
        json!({"run_content_retention_days": 5, "policy_version": 7}),
    )
    .await;
    assert_code(&got, 409, "policy_version_conflict");
    assert_eq!(app.event_count().await, before);
    assert_eq!(get(&app, &token).await.1["run_content_retention_days"], 30);
}

#[tokio::test]
async fn concurrent_updates_with_one_version_let_exactly_one_win() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    get(&app, &token).await;
    let attempts = (0..6).map(|i| {
        put(
            &app,
            &token,
            json!({"run_content_retention_days": 10 + i, "policy_version": 1}),
        )
    });
    let results = futures::future::join_all(attempts).await;
    let ok = results.iter().filter(|r| r.0 == 200).count();
    assert_eq!(ok, 1, "{results:?}");
    assert!(results.iter().all(|r| r.0 == 200 || r.0 == 409));
    assert_eq!(get(&app, &token).await.1["policy_version"], 2);
}

#[tokio::test]
async fn bounds_and_shapes_are_validated() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    get(&app, &token).await;
    let before = app.event_count().await;
    let got = put(
        &app,
        &token,
        json!({"run_content_retention_days": 0, "policy_version": 1}),
    )
    .await;
    assert_validation(
        &got,
        "greater_than_equal",
        &["body", "run_content_retention_days"],
    );
    let got = put(
        &app,
        &token,
        json!({"run_content_retention_days": 366, "policy_version": 1}),
    )
    .await;
    assert_validation(
        &got,
        "less_than_equal",
        &["body", "run_content_retention_days"],
    );
    let got = put(
        &app,
        &token,
        json!({"unreferenced_image_retention_days": 91, "policy_version": 1}),
    )
    .await;
    assert_validation(
        &got,
        "less_than_equal",
        &["body", "unreferenced_image_retention_days"],
    );
    let got = put(
        &app,
        &token,
        json!({"allowed_regions": [], "policy_version": 1}),
    )
    .await;
    assert_validation(&got, "too_short", &["body", "allowed_regions"]);
    let got = put(
        &app,
        &token,
        json!({"allowed_regions": ["mars-1"], "policy_version": 1}),
    )
    .await;
    assert_validation(&got, "enum", &["body", "allowed_regions", "0"]);
    let got = put(&app, &token, json!({"policy_version": 1, "surprise": true})).await;
    assert_validation(&got, "extra_forbidden", &["body", "surprise"]);
    let got = put(&app, &token, json!({"run_content_retention_days": 3})).await;
    assert_validation(&got, "missing", &["body", "policy_version"]);
    let got = put(
        &app,
        &token,
        json!({"run_content_retention_days": "many", "policy_version": 1}),
    )
    .await;
    assert_validation(&got, "type_error", &["body", "run_content_retention_days"]);
    assert_eq!(
        app.event_count().await,
        before,
        "refused updates change nothing"
    );
}

#[tokio::test]
async fn allowed_regions_are_intersected_with_the_selectable_regions() {
    let app = TestApp::spawn_with(Options {
        provider: Provider::Managed,
        ..Options::default()
    })
    .await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    let (_, first) = get(&app, &token).await;
    assert_eq!(first["selectable_regions"].as_array().unwrap().len(), 10);
    let (status, body) = put(
        &app,
        &token,
        json!({"allowed_regions": ["asia-east1", "onprem", "asia-east1"], "policy_version": 1}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["allowed_regions"], json!(["asia-east1"]));
    let got = put(
        &app,
        &token,
        json!({"allowed_regions": ["onprem"], "policy_version": 2}),
    )
    .await;
    assert_validation(&got, "value_error", &["body", "allowed_regions"]);
}

#[tokio::test]
async fn each_company_sees_only_its_own_settings() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    get(&app, &seed.token("acme", "boss")).await;
    let (_, acme) = put(
        &app,
        &seed.token("acme", "boss"),
        json!({"run_content_retention_days": 9, "policy_version": 1}),
    )
    .await;
    assert_eq!(acme["run_content_retention_days"], 9);
    let (status, globex) = get(&app, &seed.token("globex", "ceo")).await;
    assert_eq!(status, 200);
    assert_eq!(globex["run_content_retention_days"], 30);
    assert_eq!(globex["policy_version"], 1);
}

/// Concurrent first reads race to record the default policy: one records it, and
/// every reader still sees it (a command that changed nothing waits for the state it
/// decided on).
#[tokio::test]
async fn concurrent_first_reads_all_see_the_default_policy() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    let before = app.event_count().await;
    let results = futures::future::join_all((0..12).map(|_| get(&app, &token))).await;
    assert!(
        results
            .iter()
            .all(|(status, body)| *status == 200 && body["policy_version"] == 1),
        "{results:?}"
    );
    assert_eq!(app.event_count().await, before + 1);
}

#[tokio::test]
async fn a_put_before_any_get_records_the_defaults_then_updates() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let (status, body) = put(
        &app,
        &seed.token("acme", "boss"),
        json!({"run_content_retention_days": 3, "policy_version": 1}),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(
        (
            body["policy_version"].clone(),
            body["run_content_retention_days"].clone()
        ),
        (json!(2), json!(3))
    );
}
