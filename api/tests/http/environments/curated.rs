//! Curated environments: readable by every company, no tenant write path.

use super::{Caller, busybox_context, callers};
use crate::support::TestApp;
use domain::environments::archive::ArchiveFormat;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn tenants_read_curated_environments_but_cannot_upload_or_change_them() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, member) = callers(&app).await;
    let published = api::admin::curated::publish(
        &app.state,
        "operator",
        "busybox",
        "",
        ArchiveFormat::TarGz,
        busybox_context("", &[]),
    )
    .await
    .unwrap();
    let env = published.environment_id;
    let globex = Caller {
        app: &app,
        token: seed.token("globex", "ceo"),
    };
    for caller in [&boss, &member, &globex] {
        let (status, body) = caller.get(&format!("/environments/{env}")).await;
        assert_eq!(
            (status, body["owner_kind"].as_str()),
            (200, Some("system_curated"))
        );
        let (_, list) = caller.get("/environments").await;
        assert!(
            list["items"]
                .as_array()
                .unwrap()
                .iter()
                .any(|e| e["id"] == env.to_string())
        );
        assert_eq!(
            caller.get(&format!("/environments/{env}/versions")).await.0,
            200
        );
    }
    let upload = json!({"declared_bytes": 10, "archive_format": "tar"});
    assert_eq!(
        boss.post(&format!("/environments/{env}/context-uploads"), upload)
            .await
            .0,
        404
    );
    assert_eq!(
        boss.get(&format!("/environments/{env}/context-uploads"))
            .await
            .0,
        404
    );
    assert_eq!(
        boss.send(
            Method::PATCH,
            &format!("/environments/{env}"),
            Some(json!({"name": "x"}))
        )
        .await
        .0,
        404
    );
    assert_eq!(
        boss.post(&format!("/environments/{env}/archive"), json!({}))
            .await
            .0,
        404
    );
    let version = published.version_id.to_string();
    let attempt = published.attempt_id.to_string();
    let finished = boss.finished(&env.to_string(), &version, &attempt).await;
    assert_eq!(
        finished["status"], "completed",
        "the service's build worker builds curated versions too"
    );
}
