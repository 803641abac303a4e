//! Context upload sessions: capability, size checks, validation on complete, abort,
//! expiry, staging slots and the upload rate.

use super::{Caller, SANDBOX, busybox_context, callers, tar_gz};
use crate::support::{As, TestApp, assert_code, assert_validation, json};
use chrono::Utc;
use domain::environments::archive::ArchiveFormat;
use domain::environments::upload::{ContextUpload, UploadCommand, UploadInitiated};
use domain::principal::{Actor, EventMetadata};
use reqwest::Method;
use serde_json::{Value, json};
use uuid::Uuid;

async fn init(caller: &Caller<'_>, environment: &str, declared: u64) -> Value {
    let (status, body) = caller
        .post(
            &format!("/environments/{environment}/context-uploads"),
            json!({"declared_bytes": declared, "archive_format": "tar.gz"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body
}

async fn put(
    caller: &Caller<'_>,
    environment: &str,
    session: &Value,
    capability: Option<&str>,
    body: Vec<u8>,
) -> (u16, Value) {
    let id = session["id"].as_str().unwrap();
    let mut request = caller
        .app
        .request(
            Method::PUT,
            &format!("{SANDBOX}/environments/{environment}/context-uploads/{id}"),
        )
        .bearer_token(&caller.token)
        .header("content-type", "application/octet-stream")
        .body(body);
    if let Some(capability) = capability {
        request = request.header("X-Sandbox-Upload-Capability", capability);
    }
    json(request.send().await.unwrap()).await
}

#[tokio::test]
async fn upload_put_complete_and_list() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    let bytes = busybox_context("", &[]);
    let session = init(&boss, &env, bytes.len() as u64 + 10).await;
    assert_eq!(session["state"], "uploading");
    assert_eq!(session["capability_header"], "X-Sandbox-Upload-Capability");
    assert!(
        session["upload_url"]
            .as_str()
            .unwrap()
            .starts_with(&app.base)
    );
    let capability = session["capability"].as_str().unwrap().to_string();
    let (status, stored) = put(&boss, &env, &session, Some(&capability), bytes.clone()).await;
    assert_eq!(status, 200, "{stored}");
    assert_eq!(stored["received_bytes"], bytes.len());
    let id = session["id"].as_str().unwrap();
    let (status, completed) = boss
        .post(
            &format!("/environments/{env}/context-uploads/{id}/complete"),
            json!({}),
        )
        .await;
    assert_eq!(status, 200, "{completed}");
    assert_eq!(completed["state"], "completed");
    assert_eq!(completed["digest"], stored["digest"]);
    let object = completed["owned_object_id"].as_str().unwrap().to_string();
    let (_, again) = boss
        .post(
            &format!("/environments/{env}/context-uploads/{id}/complete"),
            json!({}),
        )
        .await;
    assert_eq!(
        again["owned_object_id"],
        object.as_str(),
        "complete is idempotent"
    );
    let (_, got) = boss
        .get(&format!("/environments/{env}/context-uploads/{id}"))
        .await;
    assert_eq!(
        (got["state"].as_str(), got["owned_object_id"].as_str()),
        (Some("completed"), Some(object.as_str()))
    );

    let (_, version) = boss
        .post(
            &format!("/environments/{env}/versions"),
            json!({"owned_object_id": object}),
        )
        .await;
    let (status, list) = boss
        .get(&format!("/environments/{env}/context-uploads"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(list["items"][0]["owned_object_id"], object.as_str());
    assert_eq!(
        list["items"][0]["used_by_version_ids"],
        json!([version["id"]])
    );
}

#[tokio::test]
async fn the_capability_header_and_sizes_are_checked_before_reading() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    let session = init(&boss, &env, 100).await;
    let capability = session["capability"].as_str().unwrap().to_string();
    let missing = put(&boss, &env, &session, None, vec![1; 10]).await;
    assert_validation(
        &missing,
        "missing",
        &["header", "x-sandbox-upload-capability"],
    );
    let other = init(&boss, &env, 100).await;
    let fenced = put(
        &boss,
        &env,
        &session,
        other["capability"].as_str(),
        vec![1; 10],
    )
    .await;
    assert_code(&fenced, 409, "capability_fenced");
    assert_code(
        &put(&boss, &env, &session, Some(&capability), vec![1; 101]).await,
        413,
        "context_too_large",
    );
    let chunks = futures::stream::iter(vec![
        Ok::<_, std::io::Error>(vec![1u8; 60]),
        Ok(vec![2u8; 60]),
    ]);
    let id = session["id"].as_str().unwrap();
    let streamed = boss
        .app
        .request(
            Method::PUT,
            &format!("{SANDBOX}/environments/{env}/context-uploads/{id}"),
        )
        .bearer_token(&boss.token)
        .header("X-Sandbox-Upload-Capability", &capability)
        .header("content-type", "application/octet-stream")
        .body(reqwest::Body::wrap_stream(chunks))
        .send()
        .await
        .unwrap();
    assert_code(&json(streamed).await, 413, "context_too_large");
    assert_validation(
        &put(&boss, &env, &session, Some(&capability), Vec::new()).await,
        "missing",
        &["body"],
    );
    assert_eq!(
        put(&boss, &env, &session, Some(&capability), vec![1; 100])
            .await
            .0,
        200
    );
}

#[tokio::test]
async fn an_expired_capability_is_fenced() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let env: Uuid = boss.environment("py").await.parse().unwrap();
    let session = Uuid::new_v4();
    let past = Utc::now() - chrono::Duration::minutes(20);
    let capability = "cap_expired";
    let initiated = UploadInitiated {
        session_id: session,
        environment_id: env,
        company_id: seed.company("acme"),
        declared_bytes: 10,
        archive_format: ArchiveFormat::TarGz,
        capability_sha256: hex::encode(<sha2::Sha256 as sha2::Digest>::digest(capability)),
        capability_expires_at: past + chrono::Duration::minutes(15),
        expires_at: past + chrono::Duration::hours(24),
    };
    let meta = EventMetadata {
        actor: Actor::Operator("test".into()),
        company_id: None,
        request_id: "t".into(),
        time: past,
    };
    app.state
        .bus
        .execute::<ContextUpload>(
            &session.to_string(),
            UploadCommand::Initiate(initiated),
            &meta,
        )
        .await
        .unwrap();
    let (status, body) = put(
        &boss,
        &env.to_string(),
        &json!({"id": session}),
        Some(capability),
        vec![1; 5],
    )
    .await;
    assert_code(&(status, body), 409, "capability_fenced");
}

#[tokio::test]
async fn a_refused_archive_leaves_the_session_completing() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    for (files, detail) in [
        (
            tar_gz(&[("README", b"no dockerfile")]),
            "dockerfile_missing",
        ),
        (
            tar_gz(&[("Dockerfile", b"FROM scratch"), ("startup.sh", b"x")]),
            "reserved_path_or_hostile_entry",
        ),
    ] {
        let session = init(&boss, &env, files.len() as u64).await;
        let capability = session["capability"].as_str().unwrap().to_string();
        assert_eq!(
            put(&boss, &env, &session, Some(&capability), files).await.0,
            200
        );
        let id = session["id"].as_str().unwrap();
        let refused = boss
            .post(
                &format!("/environments/{env}/context-uploads/{id}/complete"),
                json!({}),
            )
            .await;
        let error = assert_code(&refused, 422, "context_invalid");
        assert_eq!(error["error_detail"], detail);
        let (_, got) = boss
            .get(&format!("/environments/{env}/context-uploads/{id}"))
            .await;
        assert_eq!(
            (got["state"].as_str(), got["error_detail"].as_str()),
            (Some("completing"), Some(detail))
        );
        let again = boss
            .post(
                &format!("/environments/{env}/context-uploads/{id}/complete"),
                json!({}),
            )
            .await;
        assert_code(&again, 422, "context_invalid");
        let (status, aborted) = boss
            .post(
                &format!("/environments/{env}/context-uploads/{id}/abort"),
                json!({}),
            )
            .await;
        assert_eq!((status, aborted["state"].as_str()), (200, Some("aborted")));
    }
}

#[tokio::test]
async fn uploads_need_owner_management_and_curated_ones_are_hidden() {
    let app = TestApp::spawn().await;
    let (_, boss, _, member) = callers(&app).await;
    let env = boss.environment("py").await;
    let path = format!("/environments/{env}/context-uploads");
    assert_eq!(
        member
            .post(
                &path,
                json!({"declared_bytes": 10, "archive_format": "tar"})
            )
            .await
            .0,
        404
    );
    assert_eq!(member.get(&path).await.0, 404);
    let bad = boss
        .post(&path, json!({"declared_bytes": 0, "archive_format": "tar"}))
        .await;
    assert_validation(&bad, "greater_than_equal", &["body", "declared_bytes"]);
    let huge = boss
        .post(
            &path,
            json!({"declared_bytes": (1u64 << 30) + 1, "archive_format": "tar"}),
        )
        .await;
    assert_validation(&huge, "less_than_equal", &["body", "declared_bytes"]);
    let format = boss
        .post(
            &path,
            json!({"declared_bytes": 10, "archive_format": "rar"}),
        )
        .await;
    assert_validation(&format, "enum", &["body", "archive_format"]);
}

#[tokio::test]
async fn more_than_five_inits_a_minute_are_rate_limited() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = boss.environment("py").await;
    for _ in 0..5 {
        init(&boss, &env, 10).await;
    }
    let sixth = boss
        .post(
            &format!("/environments/{env}/context-uploads"),
            json!({"declared_bytes": 10, "archive_format": "zip"}),
        )
        .await;
    assert_code(&sixth, 429, "upload_rate_limited");
}

#[tokio::test]
async fn twenty_live_sessions_exhaust_the_staging_slots() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let env: Uuid = boss.environment("py").await.parse().unwrap();
    let earlier = Utc::now() - chrono::Duration::minutes(5);
    for _ in 0..20 {
        let session = Uuid::new_v4();
        let initiated = UploadInitiated {
            session_id: session,
            environment_id: env,
            company_id: seed.company("acme"),
            declared_bytes: 1 << 20,
            archive_format: ArchiveFormat::Tar,
            capability_sha256: "x".into(),
            capability_expires_at: earlier + chrono::Duration::minutes(15),
            expires_at: earlier + chrono::Duration::hours(24),
        };
        let meta = EventMetadata {
            actor: Actor::Operator("t".into()),
            company_id: None,
            request_id: "t".into(),
            time: earlier,
        };
        app.state
            .bus
            .execute::<ContextUpload>(
                &session.to_string(),
                UploadCommand::Initiate(initiated),
                &meta,
            )
            .await
            .unwrap();
    }
    let refused = boss
        .post(
            &format!("/environments/{env}/context-uploads"),
            json!({"declared_bytes": 10, "archive_format": "tar"}),
        )
        .await;
    assert_code(&refused, 429, "staging_slot_exhausted");
    let (_, list) = boss
        .get(&format!("/environments/{env}/context-uploads"))
        .await;
    assert!(list["items"].as_array().unwrap().is_empty());
    let session: String = sqlx::query_scalar("SELECT id::text FROM context_uploads LIMIT 1")
        .fetch_one(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(
        boss.post(
            &format!("/environments/{env}/context-uploads/{session}/abort"),
            json!({})
        )
        .await
        .0,
        200
    );
    let freed = boss
        .post(
            &format!("/environments/{env}/context-uploads"),
            json!({"declared_bytes": 10, "archive_format": "tar"}),
        )
        .await;
    assert_eq!(freed.0, 200, "an abort frees a slot: {}", freed.1);
}

#[tokio::test]
async fn the_janitor_expires_sessions_after_a_day() {
    let app = TestApp::spawn().await;
    let (seed, boss, _, _) = callers(&app).await;
    let env: Uuid = boss.environment("py").await.parse().unwrap();
    let long_ago = Utc::now() - chrono::Duration::hours(25);
    let session = Uuid::new_v4();
    let initiated = UploadInitiated {
        session_id: session,
        environment_id: env,
        company_id: seed.company("acme"),
        declared_bytes: 10,
        archive_format: ArchiveFormat::Tar,
        capability_sha256: "x".into(),
        capability_expires_at: long_ago + chrono::Duration::minutes(15),
        expires_at: long_ago + chrono::Duration::hours(24),
    };
    let meta = EventMetadata {
        actor: Actor::Operator("t".into()),
        company_id: None,
        request_id: "t".into(),
        time: long_ago,
    };
    app.state
        .bus
        .execute::<ContextUpload>(
            &session.to_string(),
            UploadCommand::Initiate(initiated),
            &meta,
        )
        .await
        .unwrap();
    api::runtime::janitor::sweep(&app.state.runtime)
        .await
        .unwrap();
    let (_, got) = boss
        .get(&format!("/environments/{env}/context-uploads/{session}"))
        .await;
    assert_eq!(got["state"], "aborted");
}
