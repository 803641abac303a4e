//! A server killed between a write and its trigger run: the next server creates
//! exactly one run for the write, and more passes or restarts create no other
//! (issue 22: event triggers fire once per committed write, through the log).

mod process;

use api::admin::directory::{Applier, DirectoryFile};
use api::admin::operator_metadata;
use api::auth::jwt::JwtKeys;
use nix::sys::signal::Signal;
use process::{Server, data_dir, serve, signal};
use projections::pump::PumpConfig;
use projections::store::LogRepository;
use projections::testing::TestDatabase;
use projections::{CommandBus, Pump, read_models};
use reqwest::Method;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "crash-secret-crash-secret-crash-secret!!";
const TABLES: &str = "/private/module/custom_tables/company";

/// Applies a one-user directory before any server runs; answers the user's JWT.
async fn directory(db: &TestDatabase) -> String {
    let cancel = CancellationToken::new();
    let pump = Pump::new(db.pool.clone(), read_models::all(), PumpConfig::default());
    pump.start(cancel.clone()).await.unwrap();
    let bus = CommandBus::new(LogRepository::new(db.pool.clone()), pump);
    let file: DirectoryFile =
        serde_json::from_value(json!({"companies": [{"ref": "acme", "name": "Acme",
        "users": [{"ref": "boss", "username": "boss", "role": 3}], "api_keys": []}]}))
        .unwrap();
    let applier = Applier {
        bus: &bus,
        jwt: &JwtKeys::new(SECRET.as_bytes()),
        token_ttl: chrono::Duration::hours(1),
        metadata: operator_metadata("test"),
    };
    let applied = applier.apply(&file).await.unwrap();
    cancel.cancel();
    applied.companies["acme"].users["boss"].token.clone()
}

async fn call(
    server: &Server,
    token: &str,
    method: Method,
    path: &str,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = reqwest::Client::new()
        .request(method, format!("{}{path}", server.base))
        .bearer_auth(token);
    if let Some(body) = body {
        request = request.json(&body);
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Creates a company table; answers its path and id.
async fn create_table(server: &Server, token: &str, name: &str) -> (String, String) {
    let body = Some(json!({"name": name}));
    let (status, table) = call(
        server,
        token,
        Method::POST,
        &format!("{TABLES}/tables"),
        body,
    )
    .await;
    assert_eq!(status, 201, "{table}");
    let id = table["id"].as_str().unwrap().to_string();
    (format!("{TABLES}/tables/{id}"), id)
}

/// A server on the test database whose own trigger loop passes only at start.
async fn start(db: &TestDatabase, data: &std::path::Path) -> Server {
    serve(
        data,
        &[
            ("DATABASE_URL", db.url.as_str()),
            ("SANDBOX_JWT_SECRET", SECRET),
            ("SANDBOX_TRIGGER_INTERVAL", "1h"),
            ("SANDBOX_RUN_SLOTS", "0"),
        ],
    )
    .await
}

#[tokio::test]
async fn a_write_whose_server_was_killed_before_its_trigger_ran_fires_exactly_once() {
    let db = TestDatabase::fresh().await;
    let data = data_dir();
    let boss = directory(&db).await;
    let operator = JwtKeys::new(SECRET.as_bytes())
        .mint_operator(chrono::Duration::hours(1))
        .unwrap();

    let mut first = start(&db, data.path()).await;
    let (table, _) = create_table(&first, &boss, "tasks").await;
    let (log, log_id) = create_table(&first, &boss, "log").await;
    for (path, name) in [(&table, "Status"), (&log, "note")] {
        let body = json!({"name": name, "type": "string"});
        let (status, column) = call(
            &first,
            &boss,
            Method::POST,
            &format!("{path}/columns"),
            Some(body),
        )
        .await;
        assert!(status == 200 || status == 201, "{column}");
    }
    let triggers = json!({"triggers": [{"id": "copy", "name": "Copy", "on": "created",
        "actions": [{"type": "create_record", "table_id": log_id, "values": {"note": "$row.Status"}}]}]});
    let (status, saved) = call(
        &first,
        &boss,
        Method::PUT,
        &format!("{table}/triggers"),
        Some(triggers),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    let (status, record) = call(
        &first,
        &boss,
        Method::POST,
        &format!("{table}/records"),
        Some(json!({"data": {"Status": "open"}})),
    )
    .await;
    assert_eq!(status, 201, "{record}");
    signal(&mut first, Signal::SIGKILL).await;
    let runs: i64 = sqlx::query_scalar("SELECT count(*) FROM custom_table_trigger_runs")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(runs, 0, "the write committed; its trigger never ran");

    // The next server's start-up pass and the operator's passes: one run.
    let mut second = start(&db, data.path()).await;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let (status, pass) = call(
            &second,
            &operator,
            Method::POST,
            "/root/custom-tables/run-due-triggers",
            None,
        )
        .await;
        assert_eq!(status, 200, "{pass}");
        let (_, page) = call(
            &second,
            &boss,
            Method::GET,
            &format!("{table}/trigger-runs"),
            None,
        )
        .await;
        if page["total"] == 1 && page["runs"][0]["status"] == "succeeded" {
            assert_eq!(page["runs"][0]["record_id"], record["id"]);
            break;
        }
        assert!(Instant::now() < deadline, "no run: {page}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    signal(&mut second, Signal::SIGKILL).await;
    let third = start(&db, data.path()).await;
    for _ in 0..3 {
        let (status, pass) = call(
            &third,
            &operator,
            Method::POST,
            "/root/custom-tables/run-due-triggers",
            None,
        )
        .await;
        assert_eq!(status, 200, "{pass}");
        assert_eq!(pass["created"], 0, "{pass}");
    }
    let (_, page) = call(
        &third,
        &boss,
        Method::GET,
        &format!("{table}/trigger-runs"),
        None,
    )
    .await;
    assert_eq!(page["total"], 1, "{page}");
    let (_, notes) = call(&third, &boss, Method::GET, &format!("{log}/records"), None).await;
    assert_eq!(notes["total"], 1, "{notes}");
    assert_eq!(notes["records"][0]["data"]["note"], "open");
}
