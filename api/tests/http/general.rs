//! General rules of spec section 7 and the service surface: body guards, the kill
//! switch, uniform 404s, OpenAPI, health and metrics.

use crate::support::{As, Options, TestApp, assert_code, json};
use reqwest::Method;
use serde_json::Value;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const SETTINGS: &str = "/private/module/sandbox/settings";

/// Sends raw HTTP/1.1 and returns the status line and body.
async fn raw(app: &TestApp, request: String) -> (u16, String) {
    let addr = app.base.trim_start_matches("http://");
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream.write_all(request.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    let _ = tokio::time::timeout(
        std::time::Duration::from_secs(5),
        stream.read_to_end(&mut response),
    )
    .await;
    let text = String::from_utf8_lossy(&response).to_string();
    let status = text
        .split(' ')
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, text)
}

#[tokio::test]
async fn a_malformed_content_length_is_400_invalid_content_length() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    for length in ["-5", "5, 6"] {
        let request = format!(
            "PUT {SETTINGS} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ncontent-length: {length}\r\nconnection: close\r\n\r\n{{}}"
        );
        let (status, text) = raw(&app, request).await;
        assert_eq!(status, 400, "{text}");
        if text.contains("detail") {
            assert!(text.contains("invalid_content_length"), "{text}");
        }
    }
}

#[tokio::test]
async fn a_body_above_the_limit_is_413_before_it_is_read() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    // The length promises 2 MiB but no body follows: the answer must come anyway.
    let request = format!(
        "PUT {SETTINGS} HTTP/1.1\r\nhost: x\r\nauthorization: Bearer {token}\r\ncontent-type: application/json\r\ncontent-length: 2097152\r\nconnection: close\r\n\r\n"
    );
    let (status, text) = raw(&app, request).await;
    assert_eq!(status, 413, "{text}");
    assert!(text.contains("request_too_large"), "{text}");
}

#[tokio::test]
async fn a_chunked_body_above_the_limit_is_413() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let body = format!(
        "{{\"policy_version\": 1, \"pad\": \"{}\"}}",
        "x".repeat(1_100_000)
    );
    let stream = futures::stream::iter(vec![Ok::<_, std::io::Error>(body.into_bytes())]);
    let response = app
        .request(Method::PUT, SETTINGS)
        .bearer_token(&seed.token("acme", "boss"))
        .body(reqwest::Body::wrap_stream(stream))
        .send()
        .await
        .unwrap();
    assert_code(&json(response).await, 413, "request_too_large");
}

#[tokio::test]
async fn the_kill_switch_refuses_changes_but_not_reads_cancel_or_download() {
    let app = TestApp::spawn_with(Options {
        enabled: false,
        ..Options::default()
    })
    .await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    let read = app
        .request(Method::GET, SETTINGS)
        .bearer_token(&token)
        .send()
        .await
        .unwrap();
    assert_eq!(read.status().as_u16(), 200);
    let write = app
        .request(Method::PUT, SETTINGS)
        .bearer_token(&token)
        .json(&serde_json::json!({"policy_version": 1}));
    assert_code(
        &json(write.send().await.unwrap()).await,
        503,
        "sandbox_disabled",
    );
    let room = seed.room("acme", "lab");
    for path in [
        format!("/chatrooms/{room}/runs/r1/cancel"),
        format!("/chatrooms/{room}/runs/r1/artifacts/a1/download"),
    ] {
        let response = app
            .request(Method::POST, &format!("/private/module/sandbox{path}"))
            .bearer_token(&token)
            .send()
            .await
            .unwrap();
        assert_ne!(
            response.status().as_u16(),
            503,
            "{path} passes the kill switch"
        );
    }
}

/// The `/metrics` page.
async fn metrics_text(app: &TestApp) -> String {
    let response = app.request(Method::GET, "/metrics").send().await.unwrap();
    response.text().await.unwrap()
}

/// A `PUT /settings` as `user` of `company`: its status.
async fn settings_write(
    app: &TestApp,
    seed: &crate::support::Seed,
    company: &str,
    user: &str,
) -> u16 {
    let write = app
        .request(Method::PUT, SETTINGS)
        .bearer_token(&seed.token(company, user))
        .json(&serde_json::json!({"policy_version": 999}));
    write.send().await.unwrap().status().as_u16()
}

/// Sets a switch as `sandboxctl switch` does.
pub(crate) async fn switch(app: &TestApp, company: Option<uuid::Uuid>, enabled: bool) {
    use domain::switch::{SandboxSwitch, SwitchChange, SwitchCommand, switch_id};
    let change = SwitchChange {
        company_id: company,
        enabled,
        reason: "maintenance".into(),
    };
    app.state
        .bus
        .execute::<SandboxSwitch>(
            &switch_id(company),
            SwitchCommand::Set(change),
            &api::admin::operator_metadata("test"),
        )
        .await
        .unwrap();
}

#[tokio::test]
async fn the_operator_switches_the_sandbox_off_for_one_company_or_everyone() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let acme = seed.company("acme");
    assert_ne!(settings_write(&app, &seed, "acme", "boss").await, 503, "on");
    switch(&app, Some(acme), false).await;
    assert_eq!(settings_write(&app, &seed, "acme", "boss").await, 503);
    assert_ne!(
        settings_write(&app, &seed, "globex", "ceo").await,
        503,
        "another company is on"
    );
    let read = app
        .request(Method::GET, SETTINGS)
        .bearer_token(&seed.token("acme", "boss"));
    assert_eq!(read.send().await.unwrap().status().as_u16(), 200);
    let room = seed.room("acme", "lab");
    let cancel = app
        .request(
            Method::POST,
            &format!("/private/module/sandbox/chatrooms/{room}/runs/r1/cancel"),
        )
        .bearer_token(&seed.token("acme", "boss"));
    assert_ne!(cancel.send().await.unwrap().status().as_u16(), 503);
    let metrics = metrics_text(&app).await;
    assert!(
        metrics.contains("sandbox_companies_disabled 1"),
        "{metrics}"
    );
    assert!(metrics.contains("sandbox_enabled 1"), "{metrics}");

    switch(&app, None, false).await;
    assert_eq!(
        settings_write(&app, &seed, "globex", "ceo").await,
        503,
        "global off"
    );
    let metrics = metrics_text(&app).await;
    assert!(metrics.contains("sandbox_enabled 0"), "{metrics}");
    switch(&app, None, true).await;
    switch(&app, Some(acme), true).await;
    assert_ne!(
        settings_write(&app, &seed, "acme", "boss").await,
        503,
        "on again"
    );
    let changes: i64 =
        sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_type = 'sandbox_switch'")
            .fetch_one(&app.state.pool)
            .await
            .unwrap();
    assert_eq!(changes, 4, "each change is an event");
}

#[tokio::test]
async fn unknown_paths_answer_the_uniform_404() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    for path in ["/nothing-here", "/private/module/sandbox/nothing-here"] {
        let got = json(
            app.request(Method::GET, path)
                .bearer_token(&seed.token("acme", "boss"))
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(
            got,
            (404, serde_json::json!({"detail": "Not found"})),
            "{path}"
        );
    }
}

#[tokio::test]
async fn openapi_covers_every_route_with_the_spec_tags() {
    let app = TestApp::spawn().await;
    let (status, doc) = json(
        app.request(Method::GET, "/openapi.json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(status, 200);
    assert_eq!(doc["openapi"], "3.1.0");
    let paths = doc["paths"].as_object().unwrap();
    for path in [
        "/healthz",
        "/metrics",
        "/public/info/sandbox/regions",
        "/public/info/sandbox/profiles",
        "/public/info/model_key/public_key",
        "/private/module/sandbox/settings",
        "/private/module/sandbox/tasks",
        "/private/module/sandbox/tasks/{task_id}/versions/{version_id}",
        "/private/module/sandbox/tasks/{task_id}/versions/{version_id}/input-preview",
        "/private/module/sandbox/tasks/{task_id}/versions/{version_id}/script-file",
        "/private/module/sandbox/tasks/{task_id}/script-uploads",
    ] {
        assert!(
            paths.contains_key(path),
            "{path} missing from the OpenAPI document"
        );
    }
    assert!(paths["/private/module/sandbox/settings"]["put"]["requestBody"].is_object());
    let tags: Vec<&str> = doc["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["name"].as_str().unwrap())
        .collect();
    for tag in [
        "general",
        "settings",
        "environments",
        "tasks",
        "bindings",
        "secrets",
        "runs",
    ] {
        assert!(tags.contains(&tag), "tag {tag}");
    }
    for (path, operations) in paths {
        for (method, operation) in operations.as_object().unwrap() {
            let tagged = operation["tags"].as_array().is_some_and(|t| !t.is_empty());
            assert!(tagged, "{method} {path} has no tag");
        }
    }
    let schemas: &Value = &doc["components"]["schemas"];
    assert!(schemas["SandboxCompanySettingsResponse"].is_object());
}

#[tokio::test]
async fn health_and_metrics() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let (status, body) = json(app.request(Method::GET, "/healthz").send().await.unwrap()).await;
    assert_eq!((status, body["status"].as_str()), (200, Some("ok")));
    app.request(Method::GET, SETTINGS)
        .bearer_token(&seed.token("acme", "boss"))
        .send()
        .await
        .unwrap();
    let metrics = metrics_text(&app).await;
    assert!(metrics.contains("sandbox_http_requests_total"), "{metrics}");
    assert!(
        metrics.contains("route=\"/private/module/sandbox/settings\""),
        "{metrics}"
    );
    assert!(metrics.contains("sandbox_events_appended_total"));
    assert!(metrics.contains("sandbox_projection_lag_events"));
}

/// Every `"$ref"` string in a JSON tree.
fn references(node: &serde_json::Value, out: &mut Vec<String>) {
    match node {
        serde_json::Value::Object(fields) => {
            for (key, value) in fields {
                match (key.as_str(), value) {
                    ("$ref", serde_json::Value::String(target)) => out.push(target.clone()),
                    _ => references(value, out),
                }
            }
        }
        serde_json::Value::Array(items) => items.iter().for_each(|i| references(i, out)),
        _ => {}
    }
}

#[tokio::test]
async fn openapi_declares_every_path_parameter_and_defines_every_schema() {
    let app = TestApp::spawn().await;
    let (_, doc) = json(
        app.request(Method::GET, "/openapi.json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    let mut undeclared = Vec::new();
    for (path, operations) in doc["paths"].as_object().unwrap() {
        let names: Vec<&str> = path
            .split('/')
            .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
            .collect();
        for (method, operation) in operations.as_object().unwrap() {
            let declared: Vec<&str> = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
                .map(|p| p["name"].as_str().unwrap())
                .collect();
            for name in &names {
                if !declared.contains(name) {
                    undeclared.push(format!("{method} {path}: {name}"));
                }
            }
            for name in declared {
                assert!(names.contains(&name), "{method} {path} declares {name}");
            }
        }
    }
    assert!(
        undeclared.is_empty(),
        "undeclared path parameters:\n{}",
        undeclared.join("\n")
    );
    let mut targets = Vec::new();
    references(&doc, &mut targets);
    assert!(!targets.is_empty());
    for target in targets {
        let name = target
            .strip_prefix("#/components/schemas/")
            .unwrap_or_else(|| panic!("an unexpected reference {target}"));
        assert!(
            doc["components"]["schemas"][name].is_object(),
            "{target} is referenced but not defined"
        );
    }
}

#[tokio::test]
async fn openapi_ids_are_unique_every_answer_is_described_and_creations_link_onward() {
    let app = TestApp::spawn().await;
    let (_, doc) = json(
        app.request(Method::GET, "/openapi.json")
            .send()
            .await
            .unwrap(),
    )
    .await;
    let mut ids = std::collections::BTreeSet::new();
    for (path, operations) in doc["paths"].as_object().unwrap() {
        for (method, operation) in operations.as_object().unwrap() {
            let id = operation["operationId"].as_str().unwrap();
            assert!(ids.insert(id.to_string()), "{method} {path}: {id} repeats");
            for (status, response) in operation["responses"].as_object().unwrap() {
                let described = response["description"]
                    .as_str()
                    .is_some_and(|d| !d.is_empty());
                assert!(described, "{method} {path} {status} has no description");
            }
        }
    }
    let tables = "/private/module/custom_tables/company/tables";
    let links = &doc["paths"][tables]["post"]["responses"]["201"]["links"];
    let get = &links["get_table_id"];
    assert_eq!(get["parameters"]["table_id"], "$response.body#/id");
    let target = get["operationRef"].as_str().unwrap();
    let pointer = target.strip_prefix('#').unwrap();
    assert!(doc.pointer(pointer).is_some(), "{target} resolves");
    let page_size = doc["paths"]["/private/module/sandbox/runs"]["get"]["parameters"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["name"] == "page_size")
        .unwrap();
    assert_eq!(page_size["schema"]["minimum"], 1);
    assert_eq!(page_size["schema"]["maximum"], 100);
    let scope = &doc["paths"]["/private/module/sandbox/secrets"]["get"]["parameters"][0];
    assert_eq!(scope["name"], "consumer_scope");
    assert_eq!(scope["required"], true, "an enum parameter stays required");
    assert_eq!(
        scope["schema"]["enum"],
        serde_json::json!(["chatroom", "department", "company"])
    );
}

#[tokio::test]
async fn a_malformed_id_in_a_sandbox_path_is_a_422_naming_the_parameter() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    for path in [
        "/private/module/sandbox/tasks/not-a-uuid",
        "/private/module/sandbox/tasks/00000000-0000-0000-0000-000000000001/versions/null",
    ] {
        let got = json(
            app.request(Method::GET, path)
                .bearer_auth(&token)
                .send()
                .await
                .unwrap(),
        )
        .await;
        assert_eq!(got.0, 422, "{path}: {}", got.1);
        let problem = &got.1["detail"][0];
        assert_eq!(problem["type"], "uuid_parsing", "{problem}");
        assert_eq!(problem["loc"][0], "path");
        let name = problem["loc"][1].as_str().unwrap();
        assert!(["task_id", "version_id"].contains(&name), "{name}");
    }
}

#[tokio::test]
async fn an_optional_body_of_null_reads_as_no_body() {
    let app = TestApp::spawn().await;
    let seed = app.seed().await;
    let token = seed.token("acme", "boss");
    let task = uuid::Uuid::new_v4();
    let path = format!("/private/module/sandbox/tasks/{task}/shares/{task}/revoke");
    let mut answers = Vec::new();
    for body in ["", "null"] {
        let request = app
            .request(Method::POST, &path)
            .bearer_auth(&token)
            .header("content-type", "application/json")
            .body(body);
        answers.push(json(request.send().await.unwrap()).await);
    }
    assert_eq!(answers[0].0, 404, "{}", answers[0].1);
    assert_eq!(answers[0], answers[1], "null answers as no body does");
}
