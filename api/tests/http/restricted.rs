//! The restricted (sandbox-scoped) key matrix of spec sections 5.4 and 5.5 over HTTP:
//! every route family, with the status the spec names. Rows whose routes are not
//! built yet still reach the gate (the sandbox router's fallback sits behind it).

use crate::support::{As, TestApp};
use reqwest::Method;

#[tokio::test]
async fn restricted_key_matrix_over_http() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let key = seed.key("acme", "bot");
    let lab = seed.room("acme", "lab");
    let ops = seed.room("acme", "ops-room");
    let rows: Vec<(Method, String, u16)> = vec![
        (Method::GET, "/settings".into(), 403),
        (Method::PUT, "/settings".into(), 403),
        (Method::GET, "/environments".into(), 403),
        (Method::POST, "/environments/e1/context-uploads".into(), 403),
        (Method::GET, "/tasks".into(), 403),
        (Method::GET, "/tasks/t1/runs".into(), 403),
        (Method::POST, "/tasks/t1/script-uploads".into(), 404),
        (Method::POST, "/bindings".into(), 403),
        (Method::POST, "/secrets".into(), 403),
        (Method::POST, "/secret-approvals".into(), 403),
        (Method::GET, "/me".into(), 403),
        (Method::GET, "/runs".into(), 403),
        (Method::POST, format!("/chatrooms/{lab}/quick-run"), 403),
        (Method::GET, format!("/chatrooms/{ops}/menu"), 403),
        (Method::POST, format!("/chatrooms/{ops}/runs"), 403),
        (Method::GET, format!("/chatrooms/{lab}/granted-jobs"), 405),
        (
            Method::POST,
            format!("/chatrooms/{lab}/granted-jobs/t1/enable"),
            405,
        ),
        (Method::POST, format!("/chatrooms/{lab}/runs/r1/retry"), 405),
        (
            Method::POST,
            format!("/chatrooms/{lab}/runs/r1/log/public-link"),
            405,
        ),
        (
            Method::POST,
            format!("/chatrooms/{lab}/runs/r1/output/public-link"),
            405,
        ),
        (
            Method::POST,
            format!("/chatrooms/{lab}/runs/r1/artifacts/a1/public-link"),
            404,
        ),
    ];
    for (method, path, expected) in rows {
        let response = app
            .request(method.clone(), &format!("/private/module/sandbox{path}"))
            .api_key(&key)
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), expected, "{method} {path}");
        if expected == 403 {
            let body: serde_json::Value = response.json().await.unwrap();
            assert!(
                body["detail"].is_string(),
                "403 carries an authentication-layer string: {body}"
            );
        }
    }
}

#[tokio::test]
async fn a_full_key_is_not_gated() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let response = app
        .request(Method::GET, "/private/module/sandbox/settings")
        .api_key(&seed.key("acme", "full"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status().as_u16(), 200);
}
