//! Sharing and room enablement over HTTP: share grants, granted jobs, bindings, the
//! room menu, `/me` and the management lists.

mod bindings;
mod menu;
mod shares;

use crate::environments::{Caller, SANDBOX};
use crate::support::{As, TestApp, json};
use crate::tasks::{company_task, draft};
use reqwest::Method;
use serde_json::{Value, json};

/// Drafts and publishes a version of `task` against the ready environment version;
/// returns the published version.
pub async fn publish(caller: &Caller<'_>, task: &str, environment_version: &str) -> Value {
    let fields = json!({
        "environment_version_id": environment_version,
        "startup_script": "set -e\n",
        "work_script": "cat \"$SERVICE_INPUTS_FILE\" > \"$SERVICE_OUTPUT_FILE\"\n",
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
        "secret_slot_declarations": ["API_TOKEN", "DB_PASSWORD"],
        "work_command": ". /workspace/work.sh && echo secret-command"
    });
    let (status, version) = draft(caller, task, fields).await;
    assert_eq!(status, 200, "{version}");
    let id = version["id"].as_str().unwrap();
    let (status, published) = caller
        .post(&format!("/tasks/{task}/versions/{id}/publish"), json!({}))
        .await;
    assert_eq!(status, 200, "{published}");
    published
}

/// A company task with one published version: (task id, version id).
pub async fn published_task(
    caller: &Caller<'_>,
    name: &str,
    environment_version: &str,
) -> (String, String) {
    let task = company_task(caller, name).await;
    let version = publish(caller, &task, environment_version).await;
    (task, version["id"].as_str().unwrap().to_string())
}

/// A request with an API key.
pub async fn with_key(app: &TestApp, key: &str, method: Method, path: &str) -> (u16, Value) {
    let response = app
        .request(method, &format!("{SANDBOX}{path}"))
        .api_key(key)
        .send()
        .await
        .unwrap();
    json(response).await
}
