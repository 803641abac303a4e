//! Beyond one machine (issue 28): two API nodes and one worker node
//! (`sandbox-api serve --role api|worker`) against one database and one data
//! directory. Writers create records on one API node and read each back at once on
//! the other (read-your-writes across nodes) and submit runs on both, which only the
//! worker node executes; mid-stream the leader (the node that seals and projects the
//! log) is killed with SIGKILL, another node takes the lease over, and the killed
//! node comes back.
//!
//! At the end: exactly one leader; no read on the other node missed an
//! acknowledged write; every acknowledged record is in the log; every run
//! completed on the worker node; the log verifies. The figures (writes, latency
//! percentiles, the hand-over gap) are printed for `docs/scaling.md`.

#[path = "../process/mod.rs"]
mod process;
#[path = "../crash_loop/setup.rs"]
mod setup;

use nix::sys::signal::Signal;
use process::{Server, data_dir, serve, signal};
use projections::testing::TestDatabase;
use reqwest::Method;
use serde_json::{Value, json};
use setup::{busybox_context, call, directory, prepare};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

const SECRET: &str = "scale-out-secret-scale-out-secret!!!";
const SANDBOX: &str = "/private/module/sandbox";
const TABLES: &str = "/private/module/custom_tables/company";

/// A node of `role` on the shared database and data directory.
async fn node(data: &Path, url: &str, role: &str) -> Server {
    serve(
        data,
        &[
            ("DATABASE_URL", url),
            ("SANDBOX_ROLE", role),
            ("SANDBOX_JWT_SECRET", SECRET),
            ("SANDBOX_RUN_SLOTS", "2"),
        ],
    )
    .await
}

/// The node's `/healthz` answer (`None` while it is down).
async fn health(base: &str) -> Option<Value> {
    let response = reqwest::get(format!("{base}/healthz")).await.ok()?;
    response.json().await.ok()
}

/// Waits until exactly one of `bases` reports the pump lease; answers its index.
async fn one_leader(bases: &[String]) -> usize {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let mut leaders = Vec::new();
        for (i, base) in bases.iter().enumerate() {
            if health(base)
                .await
                .is_some_and(|h| h["pump_leader"] == json!(true))
            {
                leaders.push(i);
            }
        }
        if let [leader] = leaders[..] {
            return leader;
        }
        assert!(
            Instant::now() < deadline,
            "no single leader: {leaders:?} of {bases:?}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// What the writers saw.
#[derive(Default)]
struct Seen {
    records: Vec<String>,
    runs: Vec<String>,
    latencies: Vec<Duration>,
    missed_reads: Vec<String>,
}

/// The two API nodes' addresses (one is down while it is being replaced) and what
/// the writers saw.
struct Stream {
    api: RwLock<[Option<String>; 2]>,
    token: String,
    room: String,
    version: String,
    table: String,
    stop: AtomicBool,
    seen: Mutex<Seen>,
}

impl Stream {
    /// Writes on one API node, reads back on the other (on the same one while the
    /// other is down).
    async fn writer(self: Arc<Self>, writer: usize) {
        let client = reqwest::Client::new();
        let mut i = 0usize;
        while !self.stop.load(Ordering::Relaxed) {
            i += 1;
            let nodes = self.api.read().unwrap().clone();
            let up: Vec<&String> = nodes.iter().flatten().collect();
            let write = up[(writer + i) % up.len()].clone();
            let read = up[(writer + i + 1) % up.len()].clone();
            if i.is_multiple_of(10) {
                self.submit_run(&client, &write, &format!("w{writer}-{i}"))
                    .await;
            } else {
                self.write_record(&client, &write, &read, &format!("w{writer}-{i}"))
                    .await;
            }
        }
    }

    async fn write_record(&self, client: &reqwest::Client, write: &str, read: &str, name: &str) {
        let path = format!("{TABLES}/tables/{}/records", self.table);
        let started = Instant::now();
        let body = json!({"data": {"Name": name}});
        let answer = call(
            client,
            write,
            &self.token,
            Method::POST,
            &path,
            Some(body),
            None,
        )
        .await;
        let Some((201, record)) = answer else {
            return;
        };
        let latency = started.elapsed();
        let id = record["id"].as_str().unwrap().to_string();
        let back = call(
            client,
            read,
            &self.token,
            Method::GET,
            &format!("{path}/{id}"),
            None,
            None,
        )
        .await;
        let mut seen = self.seen.lock().unwrap();
        seen.latencies.push(latency);
        // A node that went down between the write and the read proves nothing.
        if let Some((status, _)) = back
            && status != 200
        {
            seen.missed_reads.push(format!("{id} on {read}: {status}"));
        }
        seen.records.push(id);
    }

    async fn submit_run(&self, client: &reqwest::Client, node: &str, key: &str) {
        let path = format!("{SANDBOX}/chatrooms/{}/runs", self.room);
        let body = json!({"task_version_id": self.version, "input": {"key": key}});
        if let Some((200, run)) = call(
            client,
            node,
            &self.token,
            Method::POST,
            &path,
            Some(body),
            Some(key),
        )
        .await
        {
            let id = run["id"].as_str().unwrap().to_string();
            self.seen.lock().unwrap().runs.push(id);
        }
    }
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

/// Waits until every run has ended; answers each status with its worker.
async fn ended(pool: &sqlx::PgPool, runs: &[uuid::Uuid]) -> Vec<(String, Option<String>)> {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let rows: Vec<(String, Option<String>)> = sqlx::query_as(
            "SELECT status, worker_id FROM runs WHERE id = ANY($1) AND terminal_at IS NOT NULL",
        )
        .bind(runs)
        .fetch_all(pool)
        .await
        .unwrap();
        if rows.len() == runs.len() {
            return rows;
        }
        assert!(Instant::now() < deadline, "runs did not end");
        tokio::time::sleep(Duration::from_millis(300)).await;
    }
}

#[tokio::test]
async fn two_api_nodes_and_a_worker_survive_the_leaders_death() {
    let db = TestDatabase::fresh().await;
    let (token, room) = directory(&db.pool).await;
    let data = data_dir();
    // The first node generates the data directory's keys and takes the lease.
    let mut a = node(data.path(), &db.url, "api").await;
    assert_eq!(one_leader(std::slice::from_ref(&a.base)).await, 0);
    let b = node(data.path(), &db.url, "api").await;
    let mut w = node(data.path(), &db.url, "worker").await;
    let mut roles = Vec::new();
    for base in [&a.base, &b.base, &w.base] {
        roles.push(health(base).await.unwrap()["role"].clone());
    }
    assert_eq!(roles, [json!("api"), json!("api"), json!("worker")]);
    let on_worker = reqwest::get(format!("{}{SANDBOX}/me", w.base))
        .await
        .unwrap();
    assert_eq!(on_worker.status(), 404, "a worker node serves no API");

    // Built by the worker node (the API nodes claim no builds).
    let (version, table, _) = prepare(&a.base, &token, busybox_context(&[]), "echo hi\n").await;
    let stream = Arc::new(Stream {
        api: RwLock::new([Some(a.base.clone()), Some(b.base.clone())]),
        token,
        room,
        version,
        table,
        stop: AtomicBool::new(false),
        seen: Mutex::default(),
    });
    let writers: Vec<_> = (0..4)
        .map(|w| tokio::spawn(Arc::clone(&stream).writer(w)))
        .collect();

    tokio::time::sleep(Duration::from_secs(3)).await;
    let bases = [a.base.clone(), b.base.clone(), w.base.clone()];
    assert_eq!(one_leader(&bases).await, 0, "the first node still leads");
    *stream.api.write().unwrap() = [None, Some(b.base.clone())];
    signal(&mut a, Signal::SIGKILL).await;
    let killed = Instant::now();
    let survivors = [b.base.clone(), w.base.clone()];
    let new_leader = one_leader(&survivors).await;
    let handover = killed.elapsed();
    tokio::time::sleep(Duration::from_secs(3)).await;
    a = node(data.path(), &db.url, "api").await;
    *stream.api.write().unwrap() = [Some(a.base.clone()), Some(b.base.clone())];
    tokio::time::sleep(Duration::from_secs(3)).await;
    stream.stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }

    let bases = [a.base.clone(), b.base.clone(), w.base.clone()];
    let leader = one_leader(&bases).await;
    assert_ne!(leader, 0, "the restarted node does not take the lease back");
    let seen = std::mem::take(&mut *stream.seen.lock().unwrap());
    assert!(seen.missed_reads.is_empty(), "{:?}", seen.missed_reads);
    let records = &seen.records;
    let found: i64 = sqlx::query_scalar(
        "SELECT count(DISTINCT aggregate_id) FROM events
          WHERE aggregate_id = ANY($1) AND position IS NOT NULL",
    )
    .bind(records)
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(
        found as usize,
        records.len(),
        "every acknowledged record is in the log"
    );
    let runs: Vec<uuid::Uuid> = seen.runs.iter().map(|id| id.parse().unwrap()).collect();
    assert!(!runs.is_empty(), "runs were submitted");
    let ended = ended(&db.pool, &runs).await;
    for (status, worker) in &ended {
        assert_eq!(status, "completed");
        let worker = worker.as_deref().unwrap_or_default();
        assert!(worker.starts_with("executor-"), "{worker}");
    }
    let mut conn = db.pool.acquire().await.unwrap();
    let verification = projections::audit::verify::verify(&mut conn, &[], |_| {})
        .await
        .unwrap();
    assert!(verification.broken.is_none(), "{:?}", verification.broken);
    drop(conn);

    let mut latencies = seen.latencies.clone();
    latencies.sort();
    println!(
        "scale-out: {} records written on one API node and read at once on the other, 0 missed; \
         {} runs completed on the worker node; write p50 {:?}, p99 {:?}, max {:?}; \
         leader killed, node {} of the survivors took over after {:?}",
        records.len(),
        ended.len(),
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.99),
        latencies.last().unwrap(),
        new_leader,
        handover,
    );
    for server in [&mut a, &mut w] {
        assert!(signal(server, Signal::SIGTERM).await.success());
    }
    let mut b = b;
    assert!(signal(&mut b, Signal::SIGTERM).await.success());
}
