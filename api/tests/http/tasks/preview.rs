//! Input preview: the canonical inputs file, its digest, the runtime contract and
//! the schema verdict; it writes nothing.

use super::{company_task, draft, draft_environment_version};
use crate::environments::callers;
use crate::support::{As, TestApp, assert_code};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

#[tokio::test]
async fn input_preview_canonicalizes_checks_and_dispatches_nothing() {
    let app = TestApp::spawn().await;
    let (_, boss, _, _) = callers(&app).await;
    let env = draft_environment_version(&boss).await;
    let task = company_task(&boss, "preview").await;
    let (_, version) = draft(
        &boss,
        &task,
        json!({"environment_version_id": env, "work_command": "python3 main.py",
               "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}),
    )
    .await;
    let path = format!(
        "/tasks/{task}/versions/{}/input-preview",
        version["id"].as_str().unwrap()
    );
    let before = app.event_count().await;

    let raw = |body: &str| {
        let request = app
            .request(
                Method::POST,
                &format!("{}{path}", crate::environments::SANDBOX),
            )
            .bearer_token(&boss.token)
            .header("content-type", "application/json")
            .body(body.to_string());
        async move { crate::support::json(request.send().await.unwrap()).await }
    };
    let (status, preview) =
        raw(r#"{"input": {"n": 1.0E1, "b": "\u00e9\u20ac", "a": [true, null, 1e-7]}}"#).await;
    assert_eq!(status, 200, "{preview}");
    let content = preview["input_file_content"].as_str().unwrap();
    assert_eq!(content, r#"{"a":[true,null,1e-7],"b":"é€","n":10}"#);
    assert_eq!(
        preview["input_digest"],
        format!("sha256:{}", hex::encode(Sha256::digest(content.as_bytes())))
    );
    assert_eq!(preview["schema_valid"], true);
    assert_eq!(preview["schema_errors"], json!([]));
    let contract = &preview["runtime_contract"];
    assert_eq!(contract["inputs_file_env"], "SERVICE_INPUTS_FILE");
    assert_eq!(contract["output_file_env"], "SERVICE_OUTPUT_FILE");
    assert_eq!(contract["working_directory"], "/workspace");
    assert_eq!(
        contract["work_command"], "python3 main.py",
        "the owner sees the real command"
    );
    assert!(
        contract["network"]
            .as_str()
            .unwrap()
            .contains("no outbound network")
    );

    let (_, invalid) = boss.post(&path, json!({"input": {"n": "ten"}})).await;
    assert_eq!(invalid["schema_valid"], false);
    assert_eq!(invalid["schema_errors"].as_array().unwrap().len(), 1);

    let deep = format!("{{\"input\": {}1{}}}", "[".repeat(65), "]".repeat(65));
    assert_eq!(
        assert_code(&raw(&deep).await, 422, "input_not_stageable")["rule"],
        "input_too_deep"
    );
    assert_eq!(
        assert_code(
            &raw(r#"{"input": {"a": 1, "a": 2}}"#).await,
            422,
            "input_not_stageable"
        )["rule"],
        "input_duplicate_key"
    );
    assert_eq!(
        assert_code(
            &raw(r#"{"input": "a\u0000b"}"#).await,
            422,
            "input_not_stageable"
        )["rule"],
        "input_contains_nul"
    );
    let wide = json!({"input": (0..100_001).map(|_| Value::Null).collect::<Vec<_>>()});
    assert_eq!(
        assert_code(&boss.post(&path, wide).await, 422, "input_not_stageable")["rule"],
        "input_too_many_nodes"
    );
    assert_eq!(
        boss.post(&path, json!({"input": 1, "extra": 2})).await.0,
        422
    );
    assert_eq!(boss.post(&path, json!({})).await.0, 422);
    assert_eq!(
        app.event_count().await,
        before,
        "a preview appends no event"
    );
}
