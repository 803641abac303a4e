//! The world the crash loop writes into: one company with one room and its
//! manager, a ready busybox environment, a published task and a table.

use crate::{SANDBOX, SECRET, TABLES};
use api::admin::directory::{Applier, DirectoryFile};
use api::admin::operator_metadata;
use api::auth::jwt::JwtKeys;
use projections::pump::PumpConfig;
use projections::store::LogRepository;
use projections::{CommandBus, Pump, read_models};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::io::Write;
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Applies a one-room directory; answers the manager's JWT and the room id.
pub(crate) async fn directory(pool: &PgPool) -> (String, String) {
    let cancel = CancellationToken::new();
    let pump = Pump::new(pool.clone(), read_models::all(), PumpConfig::default());
    pump.start(cancel.clone()).await.unwrap();
    let bus = CommandBus::new(LogRepository::new(pool.clone()), pump);
    let file: DirectoryFile = serde_json::from_value(json!({"companies": [{
        "ref": "acme", "name": "Acme",
        "chatrooms": [{"ref": "lab", "name": "lab"}],
        "users": [{"ref": "boss", "username": "boss", "role": 3, "chatrooms": ["lab"]}],
        "api_keys": []}]}))
    .unwrap();
    let applier = Applier {
        bus: &bus,
        jwt: &JwtKeys::new(SECRET.as_bytes()),
        token_ttl: chrono::Duration::hours(2),
        metadata: operator_metadata("crash-loop"),
    };
    let applied = applier.apply(&file).await.unwrap();
    cancel.cancel();
    let company = &applied.companies["acme"];
    (
        company.users["boss"].token.clone(),
        company.chatrooms["lab"].to_string(),
    )
}

/// One JSON request; `None` when the server did not answer (it is down).
pub(crate) async fn call(
    client: &reqwest::Client,
    base: &str,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
    key: Option<&str>,
) -> Option<(u16, Value)> {
    let mut request = client
        .request(method, format!("{base}{path}"))
        .bearer_auth(token)
        .timeout(Duration::from_secs(10));
    if let Some(body) = body {
        request = request.json(&body);
    }
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    let response = request.send().await.ok()?;
    let status = response.status().as_u16();
    Some((status, response.json().await.unwrap_or(Value::Null)))
}

/// A build context of busybox alone, plus `ballast` (an unused file) when given.
pub(crate) fn busybox_context(ballast: &[u8]) -> Vec<u8> {
    let busybox = std::fs::read("/bin/busybox").expect("busybox-static is installed");
    let dockerfile = b"FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";
    let mut builder = tar::Builder::new(Vec::new());
    let mut files = vec![("Dockerfile", &dockerfile[..]), ("busybox", &busybox)];
    if !ballast.is_empty() {
        files.push(("ballast.bin", ballast));
    }
    for (path, content) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        builder.append_data(&mut header, path, content).unwrap();
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&builder.into_inner().unwrap()).unwrap();
    gz.finish().unwrap()
}

/// A published company task running `work_script` in an environment built from
/// `context`, and a table with one column: the task version, the table and the
/// column's internal key.
pub(crate) async fn prepare(
    base: &str,
    token: &str,
    context: Vec<u8>,
    work_script: &str,
) -> (String, String, String) {
    let client = reqwest::Client::new();
    let ok = |answer: Option<(u16, Value)>, what: &str| {
        let (status, body) = answer.unwrap_or_else(|| panic!("{what}: no answer"));
        assert!((200..300).contains(&status), "{what}: {status} {body}");
        body
    };
    let post = |path: String, body: Value| {
        let client = client.clone();
        async move { call(&client, base, token, Method::POST, &path, Some(body), None).await }
    };
    let env = ok(
        post(
            format!("{SANDBOX}/environments"),
            json!({"name": "busybox"}),
        )
        .await,
        "environment",
    );
    let env = env["id"].as_str().unwrap().to_string();
    let init = ok(
        post(
            format!("{SANDBOX}/environments/{env}/context-uploads"),
            json!({"declared_bytes": context.len(), "archive_format": "tar.gz"}),
        )
        .await,
        "upload",
    );
    let session = init["id"].as_str().unwrap();
    let put = client
        .put(format!(
            "{base}{SANDBOX}/environments/{env}/context-uploads/{session}"
        ))
        .bearer_auth(token)
        .header(
            "X-Sandbox-Upload-Capability",
            init["capability"].as_str().unwrap(),
        )
        .header("content-type", "application/octet-stream")
        .body(context)
        .send()
        .await
        .unwrap();
    assert_eq!(put.status().as_u16(), 200);
    let completed = ok(
        post(
            format!("{SANDBOX}/environments/{env}/context-uploads/{session}/complete"),
            json!({}),
        )
        .await,
        "complete",
    );
    let version = ok(
        post(
            format!("{SANDBOX}/environments/{env}/versions"),
            json!({"owned_object_id": completed["owned_object_id"]}),
        )
        .await,
        "version",
    );
    let version = version["id"].as_str().unwrap().to_string();
    let attempt = ok(
        post(
            format!("{SANDBOX}/environments/{env}/versions/{version}/builds"),
            json!({}),
        )
        .await,
        "build",
    );
    let attempt = attempt["id"].as_str().unwrap().to_string();
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let path = format!("{SANDBOX}/environments/{env}/versions/{version}/builds/{attempt}");
        let (_, build) = call(&client, base, token, Method::GET, &path, None, None)
            .await
            .unwrap();
        if build["terminal_class"].is_string() {
            assert_eq!(build["terminal_class"], "completed", "{build}");
            break;
        }
        assert!(Instant::now() < deadline, "the build did not finish");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
    let task = ok(
        post(
            format!("{SANDBOX}/tasks"),
            json!({"name": "echo", "owner_scope": "company"}),
        )
        .await,
        "task",
    );
    let task = task["id"].as_str().unwrap().to_string();
    let draft = json!({"environment_version_id": version, "work_script": work_script, "timeout_seconds": 60});
    let task_version = ok(
        post(format!("{SANDBOX}/tasks/{task}/versions"), draft).await,
        "draft",
    );
    let task_version = task_version["id"].as_str().unwrap().to_string();
    ok(
        post(
            format!("{SANDBOX}/tasks/{task}/versions/{task_version}/publish"),
            json!({}),
        )
        .await,
        "publish",
    );
    let (_, me) = call(
        &client,
        base,
        token,
        Method::GET,
        &format!("{SANDBOX}/me"),
        None,
        None,
    )
    .await
    .unwrap();
    ok(
        post(
            format!("{SANDBOX}/tasks/{task}/shares"),
            json!({"target_kind": "company", "target_id": me["company_id"]}),
        )
        .await,
        "share",
    );
    let table = ok(
        post(format!("{TABLES}/tables"), json!({"name": "Writes"})).await,
        "table",
    );
    let table = table["id"].as_str().unwrap().to_string();
    let column = ok(
        post(
            format!("{TABLES}/tables/{table}/columns"),
            json!({"name": "Name", "type": "string"}),
        )
        .await,
        "column",
    );
    let column = column["column"]["id"].as_str().unwrap().to_string();
    (task_version, table, column)
}
