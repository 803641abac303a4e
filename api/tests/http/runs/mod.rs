//! Runs over HTTP: submission, the executor (real `buildah run`), retry, cancel,
//! artifacts and public links.

mod budget;
mod command_output;
mod execution;
mod idempotency;
mod links;
mod queries;
mod quick_run;
mod restart;
mod submission;
mod writeback;

use crate::environments::{Caller, SANDBOX};
use crate::support::{As, json};
use crate::tables::fixture::Tables;
use crate::tasks::company_task;
use reqwest::Method;
use serde_json::{Value, json};
use std::time::Duration;

/// A company task with one published version running `work_script`, shared with the
/// whole company: (task id, version id).
pub async fn runnable(
    boss: &Caller<'_>,
    environment_version: &str,
    work_script: &str,
    extra: Value,
) -> (String, String) {
    let task = company_task(boss, "job").await;
    let mut fields = json!({
        "environment_version_id": environment_version,
        "startup_script": "export GREETING=hello\n",
        "work_script": work_script,
        "timeout_seconds": 60,
    });
    for (key, value) in extra.as_object().unwrap() {
        fields[key] = value.clone();
    }
    let (status, version) = boss.post(&format!("/tasks/{task}/versions"), fields).await;
    assert_eq!(status, 200, "{version}");
    let id = version["id"].as_str().unwrap().to_string();
    let (status, published) = boss
        .post(&format!("/tasks/{task}/versions/{id}/publish"), json!({}))
        .await;
    assert_eq!(status, 200, "{published}");
    let company = boss.get("/me").await.1["company_id"].clone();
    let (status, grant) = boss
        .post(
            &format!("/tasks/{task}/shares"),
            json!({"target_kind": "company", "target_id": company}),
        )
        .await;
    assert_eq!(status, 200, "{grant}");
    (task, id)
}

/// A POST with an `Idempotency-Key` (none when `key` is empty) as a JWT caller.
pub async fn post_keyed(
    caller: &Caller<'_>,
    path: &str,
    key: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = caller
        .app
        .request(Method::POST, &format!("{SANDBOX}{path}"))
        .bearer_token(&caller.token);
    if !key.is_empty() {
        request = request.header("idempotency-key", key);
    }
    if let Some(body) = body {
        request = request.json(&body);
    }
    json(request.send().await.unwrap()).await
}

/// Mints a public link of a run's object (`log`, `output` or
/// `artifacts/{id}`) and fetches it, as a stranger would.
pub async fn fetch_public(
    caller: &Caller<'_>,
    room: &str,
    run: &str,
    object: &str,
) -> reqwest::Response {
    let path = format!("/chatrooms/{room}/runs/{run}/{object}/public-link");
    let (status, link) = caller.post(&path, json!({})).await;
    assert_eq!(status, 200, "{link}");
    caller
        .app
        .client
        .get(link["url"].as_str().unwrap())
        .send()
        .await
        .unwrap()
}

/// Submits a run in `room`.
pub async fn submit(caller: &Caller<'_>, room: &str, key: &str, body: Value) -> (u16, Value) {
    post_keyed(caller, &format!("/chatrooms/{room}/runs"), key, Some(body)).await
}

/// Polls a run until it has ended.
pub async fn finished(caller: &Caller<'_>, room: &str, run: &str) -> Value {
    let started = std::time::Instant::now();
    loop {
        let (status, detail) = caller.get(&format!("/chatrooms/{room}/runs/{run}")).await;
        assert_eq!(status, 200, "{detail}");
        if !detail["terminal_at"].is_null() {
            return detail;
        }
        assert!(
            started.elapsed() < Duration::from_secs(180),
            "run still {detail}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Polls a run until it is running.
pub async fn running(caller: &Caller<'_>, room: &str, run: &str) {
    let started = std::time::Instant::now();
    loop {
        let (_, detail) = caller.get(&format!("/chatrooms/{room}/runs/{run}")).await;
        if detail["status"] == "running" {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "never running: {detail}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A sandbox caller over a custom-tables fixture's server.
pub fn table_caller<'a>(t: &'a Tables, user: &str) -> Caller<'a> {
    Caller {
        app: &t.app,
        token: t.token(user),
    }
}

/// The `name` cells of a table's records with who created each, as `boss` reads
/// them.
pub async fn named_records(t: &Tables, table: &str) -> Vec<(String, String)> {
    let search = format!("{table}/records/search");
    let body = json!({"limit": 100});
    let (status, page) = t.call(Method::POST, &search, "boss", Some(body)).await;
    assert_eq!(status, 200, "{page}");
    page["records"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            let name = r["data"]["name"].as_str().unwrap_or_default();
            let creator = r["created_by"].as_str().unwrap_or_default();
            (name.to_string(), creator.to_string())
        })
        .collect()
}
