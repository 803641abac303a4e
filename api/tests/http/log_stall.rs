//! The log under transactions the service does not own (decision 0006): while a
//! writing transaction stays open in another database of the cluster, or in this
//! database, commands answer in their normal time and a read right after a write sees
//! it; and a command whose read wait times out answers that it committed, never 404.

use crate::environments::{Caller, SANDBOX};
use crate::support::{Options, TestApp, assert_code};
use projections::testing::TestDatabase;
use serde_json::json;
use sqlx::{Executor, PgConnection, Postgres, Transaction};
use std::time::{Duration, Instant};

/// How long the foreign transaction stays open while commands flow.
const HOLD: Duration = Duration::from_secs(60);

/// Far above a command's normal latency (milliseconds) and far below the 10 s read
/// wait a stalled log made every command sit out.
const NORMAL: Duration = Duration::from_secs(2);

/// Creates and reads back tasks for [`HOLD`]; returns how many and the slowest create.
async fn commands_flow(app: &TestApp) -> (usize, Duration) {
    let seed = app.seed().await;
    let boss = Caller {
        app,
        token: seed.token("acme", "boss"),
    };
    let (started, mut slowest, mut created) = (Instant::now(), Duration::ZERO, 0);
    while started.elapsed() < HOLD {
        let name = format!("task {created}");
        let sent = Instant::now();
        let (status, task) = boss
            .post("/tasks", json!({"name": name, "owner_scope": "company"}))
            .await;
        let took = sent.elapsed();
        assert_eq!(
            status, 200,
            "create answered {status} after {took:?}: {task}"
        );
        assert!(took < NORMAL, "a create took {took:?}");
        slowest = slowest.max(took);
        let (status, read) = boss
            .get(&format!("/tasks/{}", task["id"].as_str().unwrap()))
            .await;
        assert_eq!(status, 200, "a read right after the create: {read}");
        assert_eq!(read["name"], name.as_str());
        created += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    (created, slowest)
}

/// Writes one row in `tx` so that it holds a transaction id.
async fn hold_an_id(tx: &mut Transaction<'static, Postgres>, table: &str) {
    let conn: &mut PgConnection = tx;
    conn.execute(format!("INSERT INTO {table} VALUES (1)").as_str())
        .await
        .unwrap();
    let id: Option<String> = sqlx::query_scalar("SELECT pg_current_xact_id_if_assigned()::text")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    assert!(id.is_some(), "the open transaction holds an id");
}

#[tokio::test]
async fn commands_flow_while_another_database_holds_a_writing_transaction() {
    let app = TestApp::spawn().await;
    let other = TestDatabase::empty().await;
    other
        .pool
        .execute("CREATE TABLE busy (n int)")
        .await
        .unwrap();
    let mut foreign = other.pool.begin().await.unwrap();
    hold_an_id(&mut foreign, "busy").await;
    let (created, slowest) = commands_flow(&app).await;
    foreign.rollback().await.unwrap();
    assert!(
        created > 50,
        "only {created} commands in {HOLD:?} (slowest {slowest:?})"
    );
}

#[tokio::test]
async fn commands_flow_while_this_database_holds_a_writing_transaction() {
    let app = TestApp::spawn().await;
    let mut foreign = app.db.pool.begin().await.unwrap();
    let conn: &mut PgConnection = &mut foreign;
    conn.execute("CREATE TEMPORARY TABLE scratch (n int)")
        .await
        .unwrap();
    hold_an_id(&mut foreign, "scratch").await;
    let (created, slowest) = commands_flow(&app).await;
    foreign.rollback().await.unwrap();
    assert!(
        created > 50,
        "only {created} commands in {HOLD:?} (slowest {slowest:?})"
    );
}

#[tokio::test]
async fn a_read_wait_that_times_out_answers_committed_never_404() {
    let app = TestApp::spawn_with(Options {
        read_wait_timeout: Duration::from_secs(1),
        ..Options::default()
    })
    .await;
    let seed = app.seed().await;
    let boss = Caller {
        app: &app,
        token: seed.token("acme", "boss"),
    };
    // The pump cannot write its checkpoints, so no cycle commits and no read model
    // reaches the next write.
    let mut blocker = app.db.pool.begin().await.unwrap();
    let conn: &mut PgConnection = &mut blocker;
    conn.execute("LOCK TABLE projection_checkpoints IN EXCLUSIVE MODE")
        .await
        .unwrap();
    let response = app
        .request(reqwest::Method::POST, &format!("{SANDBOX}/tasks"))
        .header("authorization", format!("Bearer {}", boss.token))
        .json(&json!({"name": "durable", "owner_scope": "company"}))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response
            .headers()
            .get("retry-after")
            .map(|v| v.to_str().unwrap()),
        Some("1")
    );
    let answer = crate::support::json(response).await;
    let detail = assert_code(&answer, 503, "committed_not_yet_visible");
    assert_eq!(detail["committed"], true);
    let task_id = detail["resource_id"]
        .as_str()
        .expect("the created id")
        .to_string();
    let appended: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM events WHERE aggregate_type = 'task' AND aggregate_id = $1",
    )
    .bind(&task_id)
    .fetch_one(&app.db.pool)
    .await
    .unwrap();
    assert_eq!(appended, 1, "the write is in the log");
    blocker.rollback().await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (status, task) = boss.get(&format!("/tasks/{task_id}")).await;
        if status == 200 {
            assert_eq!(task["name"], "durable");
            break;
        }
        assert!(Instant::now() < deadline, "the task never became readable");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let (_, list) = boss.get("/tasks").await;
    let named: Vec<_> = list["items"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|t| t["name"] == "durable")
        .collect();
    assert_eq!(named.len(), 1, "one task, not a duplicate: {list}");
}
