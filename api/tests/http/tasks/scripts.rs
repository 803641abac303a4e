//! Scripts by file: script-upload handles and script-file replacement.

use super::{company_task, draft, draft_environment_version, post_file};
use crate::environments::callers;
use crate::support::{TestApp, assert_code, assert_validation};
use serde_json::json;

#[tokio::test]
async fn scripts_arrive_by_file_within_their_rules() {
    let app = TestApp::spawn().await;
    let (_, boss, _, member) = callers(&app).await;
    let env = draft_environment_version(&boss).await;
    let task = company_task(&boss, "files").await;
    let other = company_task(&boss, "other").await;

    let (status, upload) = post_file(
        &boss,
        &format!("/tasks/{task}/script-uploads"),
        b"echo from file\n",
    )
    .await;
    assert_eq!(status, 200, "{upload}");
    assert_eq!(upload["byte_size"], 15);
    assert!(upload["digest"].as_str().unwrap().starts_with("sha256:"));
    assert!(upload["expires_at"].is_string());
    let handle = upload["script_id"].as_str().unwrap();
    let (status, version) = draft(
        &boss,
        &task,
        json!({"environment_version_id": env, "work_script_id": handle}),
    )
    .await;
    assert_eq!(status, 200, "{version}");
    assert_eq!(version["work_script"], "echo from file\n");
    assert_validation(
        &draft(
            &boss,
            &other,
            json!({"environment_version_id": env, "work_script_id": handle}),
        )
        .await,
        "value_error",
        &["body", "work_script_id"],
    );
    assert_validation(
        &draft(
            &boss,
            &task,
            json!({"environment_version_id": env, "work_script_id": handle, "work_script": "x"}),
        )
        .await,
        "value_error",
        &["body", "work_script"],
    );

    let (_, empty) = post_file(&boss, &format!("/tasks/{task}/script-uploads"), b"").await;
    let (status, blank) = draft(
        &boss,
        &task,
        json!({"environment_version_id": env, "startup_script_id": empty["script_id"]}),
    )
    .await;
    assert_eq!(status, 200, "an empty script is a script: {blank}");
    assert_eq!(blank["startup_script"], "");
    let id = version["id"].as_str().unwrap();
    let file_path = format!("/tasks/{task}/versions/{id}/script-file?target=startup");
    let (status, replaced) = post_file(&boss, &file_path, "set -eu # ünïcode\n".as_bytes()).await;
    assert_eq!(status, 200, "{replaced}");
    assert_eq!(replaced["startup_script"], "set -eu # ünïcode\n");
    assert_eq!(replaced["work_script"], "echo from file\n");
    let bad_target = post_file(
        &boss,
        &format!("/tasks/{task}/versions/{id}/script-file?target=driver"),
        b"x",
    )
    .await;
    assert_eq!(bad_target.0, 422, "{}", bad_target.1);
    assert_eq!(post_file(&member, &file_path, b"x").await.0, 404);

    assert_code(
        &post_file(&boss, &file_path, &vec![b'a'; (1 << 20) + 1]).await,
        422,
        "script_too_large",
    );
    assert_code(
        &post_file(&boss, &file_path, &[0xff, 0xfe, b'a']).await,
        422,
        "script_not_utf8",
    );
    assert_code(
        &post_file(&boss, &file_path, b"echo \0").await,
        422,
        "script_contains_nul",
    );
    assert_eq!(
        post_file(&boss, &file_path, &vec![b'a'; 2 << 20]).await.0,
        413
    );
    let (_, unchanged) = boss.get(&format!("/tasks/{task}/versions/{id}")).await;
    assert_eq!(
        unchanged["startup_script"], "set -eu # ünïcode\n",
        "refused files change nothing"
    );

    assert_eq!(
        post_file(&member, &format!("/tasks/{task}/script-uploads"), b"x")
            .await
            .0,
        404
    );
    // The environment's context upload and the first two scripts count too: 5 in all.
    for _ in 0..2 {
        assert_eq!(
            post_file(&boss, &format!("/tasks/{task}/script-uploads"), b"x")
                .await
                .0,
            200
        );
    }
    assert_code(
        &post_file(&boss, &format!("/tasks/{task}/script-uploads"), b"x").await,
        429,
        "upload_rate_limited",
    );
    assert_code(
        &boss
            .post(
                &format!(
                    "/environments/{}/context-uploads",
                    boss.environment("ctx").await
                ),
                json!({"declared_bytes": 10, "archive_format": "tar"}),
            )
            .await,
        429,
        "upload_rate_limited",
    );
}
