//! The crash loop (issue 27, item 1): client workers issue acknowledged writes
//! across aggregates (task creations, record inserts, grant changes, keyed run
//! submissions each retried with its key) while the server is killed with SIGKILL
//! every few seconds and started again, and once PostgreSQL itself is stopped in
//! `immediate` mode (SIGQUIT to the postmaster) before the restart. The server runs
//! on its embedded defaults, so each new server adopts (or restarts) the cluster of
//! the data directory.
//!
//! At the end: every write a client saw acknowledged is in the log; the hash chain
//! verifies; every projection's digest equals the digest of a rebuild from zero; no
//! run was claimed or started twice and every key answered one run; the queued and
//! active runs never exceeded the company's limits at any position of the log.
//!
//! `CRASH_LOOP_SECONDS` (default 20) and `CRASH_LOOP_WORKERS` (default 4) size it;
//! `scripts/crash-loop.sh` runs the long version.

mod process;

use api::admin::directory::{Applier, DirectoryFile};
use api::admin::operator_metadata;
use api::auth::jwt::JwtKeys;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use process::{Server, data_dir, serve, signal};
use projections::pump::PumpConfig;
use projections::rebuild::{Outcome, Rebuild, Target};
use projections::store::LogRepository;
use projections::{CommandBus, Pump, read_models};
use reqwest::Method;
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

const SECRET: &str = "crash-loop-secret-crash-loop-secret!!";
const SANDBOX: &str = "/private/module/sandbox";
const TABLES: &str = "/private/module/custom_tables/company";

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A server on the data directory's embedded cluster.
async fn start(data: &Path) -> Server {
    serve(
        data,
        &[
            ("SANDBOX_JWT_SECRET", SECRET),
            ("SANDBOX_RUN_SLOTS", "2"),
            ("SANDBOX_READ_WAIT_TIMEOUT", "3s"),
        ],
    )
    .await
}

fn database_url(data: &Path) -> String {
    std::fs::read_to_string(data.join("database.url"))
        .unwrap()
        .trim()
        .to_string()
}

/// Applies a one-room directory; answers the manager's JWT and the room id.
async fn directory(pool: &PgPool) -> (String, String) {
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
async fn call(
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

fn busybox_context() -> Vec<u8> {
    let busybox = std::fs::read("/bin/busybox").expect("busybox-static is installed");
    let dockerfile = b"FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";
    let mut builder = tar::Builder::new(Vec::new());
    for (path, content) in [("Dockerfile", &dockerfile[..]), ("busybox", &busybox)] {
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

/// A published company task running `echo`, and a table with one column: the
/// task version, the table and the column's internal key.
async fn prepare(base: &str, token: &str) -> (String, String, String) {
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
    let context = busybox_context();
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
    let draft = json!({"environment_version_id": version, "work_script": "echo hi\n", "timeout_seconds": 60});
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

/// What the clients saw acknowledged, by kind: ids.
#[derive(Default)]
struct Acknowledged {
    ids: BTreeMap<&'static str, Vec<String>>,
    /// Idempotency key → every run id it answered.
    keys: HashMap<String, BTreeSet<String>>,
}

struct World {
    base: RwLock<String>,
    token: String,
    room: String,
    version: String,
    table: String,
    column: String,
    stop: AtomicBool,
    acknowledged: Mutex<Acknowledged>,
}

impl World {
    fn base(&self) -> String {
        self.base.read().unwrap().clone()
    }

    fn ack(&self, kind: &'static str, id: &Value) {
        let id = id
            .as_str()
            .expect("an acknowledged write names its id")
            .to_string();
        self.acknowledged
            .lock()
            .unwrap()
            .ids
            .entry(kind)
            .or_default()
            .push(id);
    }

    async fn send(
        &self,
        client: &reqwest::Client,
        path: &str,
        body: Value,
        key: Option<&str>,
    ) -> Option<(u16, Value)> {
        call(
            client,
            &self.base(),
            &self.token,
            Method::POST,
            path,
            Some(body),
            key,
        )
        .await
    }

    /// A keyed run submission, repeated (as a client whose answer was lost would)
    /// until the server answers; then once more with the same key.
    async fn submit_run(&self, client: &reqwest::Client, key: &str) {
        let path = format!("{SANDBOX}/chatrooms/{}/runs", self.room);
        let body = json!({"task_version_id": self.version, "input": {"key": key}});
        for attempt in 0..2 {
            let deadline = Instant::now() + Duration::from_secs(60);
            let answer = loop {
                match self.send(client, &path, body.clone(), Some(key)).await {
                    Some((status, run)) if status < 500 => break Some((status, run)),
                    _ if Instant::now() > deadline || self.stop.load(Ordering::Relaxed) => {
                        break None;
                    }
                    _ => tokio::time::sleep(Duration::from_millis(200)).await,
                }
            };
            let Some((200, run)) = answer else {
                return;
            };
            if attempt == 0 {
                self.ack("run", &run["id"]);
            }
            let id = run["id"].as_str().unwrap().to_string();
            self.acknowledged
                .lock()
                .unwrap()
                .keys
                .entry(key.to_string())
                .or_default()
                .insert(id);
        }
    }

    async fn writer(self: Arc<Self>, worker: usize) {
        let client = reqwest::Client::new();
        let mut i = 0usize;
        while !self.stop.load(Ordering::Relaxed) {
            i += 1;
            let name = format!("w{worker}-{i}");
            match i % 4 {
                0 => {
                    let body = json!({"name": name, "owner_scope": "company"});
                    if let Some((200, task)) = self
                        .send(&client, &format!("{SANDBOX}/tasks"), body, None)
                        .await
                    {
                        self.ack("task", &task["id"]);
                    }
                }
                1 => {
                    let path = format!("{TABLES}/tables/{}/records", self.table);
                    if let Some((201, record)) = self
                        .send(&client, &path, json!({"data": {"Name": name}}), None)
                        .await
                    {
                        self.ack("record", &record["id"]);
                    }
                }
                2 => {
                    // A grant change whose row filter names this write.
                    let path = format!("{TABLES}/tables/{}/permissions", self.table);
                    let body = json!({"subject_type": "chatroom", "subject_id": self.room,
                        "can_read": "filtered",
                        "row_filter": {"column": self.column, "op": "eq", "value": name}});
                    if let Some((200, _)) = self.send(&client, &path, body, None).await {
                        self.ack("grant", &json!(name));
                    }
                }
                _ => self.submit_run(&client, &name).await,
            }
            if self.base.read().unwrap().is_empty() {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// Stops the cluster in `immediate` mode: SIGQUIT to the postmaster.
fn stop_postgres_immediately(data: &Path) {
    let pid_file = data.join("postgres/data/postmaster.pid");
    let text = std::fs::read_to_string(&pid_file).expect("the cluster runs in the data directory");
    let pid: i32 = text.lines().next().unwrap().trim().parse().unwrap();
    kill(Pid::from_raw(pid), Signal::SIGQUIT).unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while kill(Pid::from_raw(pid), None).is_ok() {
        assert!(Instant::now() < deadline, "the postmaster did not stop");
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Waits until the service is quiet: every run has ended and the log's head,
/// fully projected, stays where it is for a second.
async fn quiet(pool: &PgPool) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let open: i64 = sqlx::query_scalar("SELECT count(*) FROM runs WHERE terminal_at IS NULL")
            .fetch_one(pool)
            .await
            .unwrap();
        let head = caught_up(pool).await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        if open == 0 && caught_up(pool).await == head {
            return head;
        }
        assert!(Instant::now() < deadline, "{open} runs did not end");
    }
}

/// Waits until every projection has applied the whole sealed log.
async fn caught_up(pool: &PgPool) -> i64 {
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let (head, behind): (Option<i64>, i64) = sqlx::query_as(
            "SELECT (SELECT max(position) FROM events),
                    (SELECT count(*) FROM events WHERE position IS NULL)
                  + (SELECT count(*) FROM projection_checkpoints
                      WHERE position < (SELECT coalesce(max(position), 0) FROM events))",
        )
        .fetch_one(pool)
        .await
        .unwrap();
        if behind == 0 {
            return head.unwrap_or(0);
        }
        assert!(
            Instant::now() < deadline,
            "the projections did not catch up"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Every acknowledged id that the log does not hold.
async fn lost(pool: &PgPool, acknowledged: &Acknowledged) -> Vec<String> {
    let mut lost = Vec::new();
    for (kind, ids) in &acknowledged.ids {
        // A grant is found by the unique value its row filter names.
        let query = match *kind {
            "grant" => {
                "SELECT DISTINCT w FROM unnest($1::text[]) w JOIN events e
                   ON e.aggregate_type = 'custom_table' AND e.position IS NOT NULL
                  AND e.payload::text LIKE '%\"' || w || '\"%'"
            }
            _ => {
                "SELECT DISTINCT aggregate_id FROM events
                  WHERE aggregate_id = ANY($1) AND position IS NOT NULL"
            }
        };
        let found: Vec<String> = sqlx::query_scalar(query)
            .bind(ids)
            .fetch_all(pool)
            .await
            .unwrap();
        let found: BTreeSet<String> = found.into_iter().collect();
        lost.extend(
            ids.iter()
                .filter(|id| !found.contains(*id))
                .map(|id| format!("{kind} {id}")),
        );
    }
    lost
}

/// Runs claimed or started more than once.
async fn executed_twice(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT aggregate_id FROM events WHERE aggregate_type = 'run'
          GROUP BY aggregate_id
         HAVING count(*) FILTER (WHERE event_type = 'RunClaimed') > 1
             OR count(*) FILTER (WHERE event_type = 'RunStarted') > 1",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// The most runs queued, and the most active, at any position of the log.
async fn queue_peaks(pool: &PgPool) -> (i64, i64) {
    let events: Vec<(String, String)> = sqlx::query_as(
        "SELECT aggregate_id, event_type FROM events WHERE aggregate_type = 'run' ORDER BY position",
    )
    .fetch_all(pool)
    .await
    .unwrap();
    let mut status: HashMap<String, &str> = HashMap::new();
    let (mut queued, mut active, mut peak_queued, mut peak_active) = (0i64, 0i64, 0, 0);
    for (run, event) in &events {
        let before = status.get(run).copied();
        let after = match event.as_str() {
            "RunSubmitted" => "queued",
            "RunClaimed" | "RunStarted" | "RunCancelRequested" => "active",
            "RunFinished" => "ended",
            _ => continue,
        };
        for (state, delta) in [(before, -1), (Some(after), 1)] {
            match state {
                Some("queued") => queued += delta,
                Some("active") => active += delta,
                _ => {}
            }
        }
        status.insert(run.clone(), after);
        peak_queued = peak_queued.max(queued);
        peak_active = peak_active.max(active);
    }
    (peak_queued, peak_active)
}

/// Projections whose live digest differs from a rebuild's at `head`.
async fn digest_mismatches(pool: &PgPool, head: i64) -> Vec<String> {
    let mut conn = pool.acquire().await.unwrap();
    let live: String = sqlx::query_scalar("SELECT current_schema()::text")
        .fetch_one(&mut *conn)
        .await
        .unwrap();
    let mut mismatches = Vec::new();
    for projection in read_models::all() {
        let name = projection.name().to_string();
        let shadow = format!("crash_check_{name}");
        let job = Rebuild::start(
            pool,
            projection.clone(),
            Target::Until {
                position: head,
                schema: shadow.clone(),
            },
        )
        .await
        .unwrap();
        let outcome = job.run(&CancellationToken::new(), |_, _| {}).await.unwrap();
        assert!(
            matches!(outcome, Outcome::Built { .. }),
            "{name}: {outcome:?}"
        );
        let tables = projection.owned_tables(&mut conn, &live).await.unwrap();
        let tables: Vec<&str> = tables.iter().map(String::as_str).collect();
        let live_digest = projections::digest::digest(&mut conn, &live, &tables)
            .await
            .unwrap();
        let rebuilt = projections::digest::digest(&mut conn, &shadow, &tables)
            .await
            .unwrap();
        if live_digest != rebuilt {
            mismatches.push(name);
        }
        sqlx::query(&format!("DROP SCHEMA \"{shadow}\" CASCADE"))
            .execute(&mut *conn)
            .await
            .unwrap();
    }
    mismatches
}

#[tokio::test]
async fn acknowledged_writes_survive_a_crash_loop() {
    let seconds = setting("CRASH_LOOP_SECONDS", 20);
    let workers = setting("CRASH_LOOP_WORKERS", 4) as usize;
    let data = data_dir();
    let mut server = start(data.path()).await;
    let url = database_url(data.path());
    let pool = projections::db::connect(&url, 4).await.unwrap();
    let (token, room) = directory(&pool).await;
    let (version, table, column) = prepare(&server.base, &token).await;
    let world = Arc::new(World {
        base: RwLock::new(server.base.clone()),
        token,
        room,
        version,
        table,
        column,
        stop: AtomicBool::new(false),
        acknowledged: Mutex::default(),
    });
    let writers: Vec<_> = (0..workers)
        .map(|w| tokio::spawn(Arc::clone(&world).writer(w)))
        .collect();

    let started = Instant::now();
    let (mut kills, mut postgres_stops) = (0, 0);
    while started.elapsed() < Duration::from_secs(seconds) {
        tokio::time::sleep(Duration::from_millis(2000 + (kills % 3) * 700)).await;
        signal(&mut server, Signal::SIGKILL).await;
        kills += 1;
        if postgres_stops == 0 && started.elapsed() > Duration::from_secs(seconds / 2) {
            stop_postgres_immediately(data.path());
            postgres_stops += 1;
        }
        server = start(data.path()).await;
        *world.base.write().unwrap() = server.base.clone();
    }
    world.stop.store(true, Ordering::Relaxed);
    for writer in writers {
        writer.await.unwrap();
    }

    let pool = projections::db::connect(&url, 4).await.unwrap();
    let head = quiet(&pool).await;
    let acknowledged = std::mem::take(&mut *world.acknowledged.lock().unwrap());
    let total: usize = acknowledged.ids.values().map(Vec::len).sum();
    let lost = lost(&pool, &acknowledged).await;
    let duplicates: Vec<&String> = acknowledged
        .keys
        .iter()
        .filter(|(_, runs)| runs.len() > 1)
        .map(|(key, _)| key)
        .collect();
    let twice = executed_twice(&pool).await;
    let (peak_queued, peak_active) = queue_peaks(&pool).await;
    let limits = api::limits::company_limits(&pool, company_of(&pool).await)
        .await
        .unwrap();
    let mut conn = pool.acquire().await.unwrap();
    let verification = projections::audit::verify::verify(&mut conn, &[], |_| {})
        .await
        .unwrap();
    drop(conn);
    let mismatches = digest_mismatches(&pool, head).await;
    let per_kind: BTreeMap<_, _> = acknowledged
        .ids
        .iter()
        .map(|(k, v)| (*k, v.len()))
        .collect();
    println!(
        "crash loop: {seconds} s, {workers} writers, {kills} SIGKILLs, {postgres_stops} immediate PostgreSQL stop; \
         acknowledged {total} {per_kind:?}, found {}, lost {}, duplicates {}; runs claimed or started twice {}; \
         peak queued {peak_queued} (limit {}), peak active {peak_active} (limit {}); log verified to {}; \
         projections differing from a rebuild {:?}",
        total - lost.len(),
        lost.len(),
        duplicates.len(),
        twice.len(),
        limits.queued_run_limit,
        limits.run_concurrency_limit,
        verification.verified,
        mismatches
    );
    assert!(kills >= 2, "the loop killed the server");
    assert!(
        per_kind.len() == 4,
        "every kind of write was acknowledged: {per_kind:?}"
    );
    assert!(lost.is_empty(), "lost: {lost:?}");
    assert!(
        duplicates.is_empty(),
        "keys answered more than one run: {duplicates:?}"
    );
    assert!(twice.is_empty(), "runs executed twice: {twice:?}");
    assert!(peak_queued <= limits.queued_run_limit);
    assert!(peak_active <= limits.run_concurrency_limit);
    assert!(verification.broken.is_none(), "{:?}", verification.broken);
    assert_eq!(verification.verified, head);
    assert!(mismatches.is_empty(), "{mismatches:?}");
    let status = signal(&mut server, Signal::SIGTERM).await;
    assert!(status.success());
}

async fn company_of(pool: &PgPool) -> uuid::Uuid {
    let id: String = sqlx::query_scalar(
        "SELECT aggregate_id FROM events WHERE aggregate_type = 'company' LIMIT 1",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    id.parse().unwrap()
}
