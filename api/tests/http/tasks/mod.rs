//! Catalog tasks and task versions over HTTP.

mod bundles;
mod catalog;
mod drafts;
mod preview;
mod scripts;
mod scrub;
mod versions;

use crate::environments::{Caller, SANDBOX, busybox_context};
use crate::support::{As, json, multipart_file};
use reqwest::Method;
use serde_json::{Value, json};

/// Creates a company task as the caller; returns its id.
pub async fn company_task(caller: &Caller<'_>, name: &str) -> String {
    let (status, body) = caller
        .post("/tasks", json!({"name": name, "owner_scope": "company"}))
        .await;
    assert_eq!(status, 200, "{body}");
    body["id"].as_str().unwrap().to_string()
}

/// An environment version that is not built (enough for drafts).
pub async fn draft_environment_version(caller: &Caller<'_>) -> String {
    let env = caller.environment("py").await;
    caller.version(&env, busybox_context("", &[])).await
}

/// An environment version built to `ready` (a real buildah build).
pub async fn ready_environment_version(caller: &Caller<'_>) -> String {
    let env = caller.environment("ready").await;
    let version = caller.version(&env, busybox_context("", &[])).await;
    let attempt = caller.build(&env, &version).await;
    let done = caller
        .finished(&env, &version, attempt["id"].as_str().unwrap())
        .await;
    assert_eq!(done["terminal_class"], "completed", "{done}");
    version
}

/// Creates a draft version of a task with the given fields.
pub async fn draft(caller: &Caller<'_>, task: &str, fields: Value) -> (u16, Value) {
    caller
        .post(&format!("/tasks/{task}/versions"), fields)
        .await
}

/// Posts a multipart body with one `file` part.
pub async fn post_file(caller: &Caller<'_>, path: &str, file: &[u8]) -> (u16, Value) {
    let (content_type, body) = multipart_file("script.sh", "text/plain", file);
    let response = caller
        .app
        .request(Method::POST, &format!("{SANDBOX}{path}"))
        .bearer_token(&caller.token)
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    json(response).await
}
