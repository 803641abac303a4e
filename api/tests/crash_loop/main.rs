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

mod checks;
#[path = "../process/mod.rs"]
mod process;
mod setup;
mod writers;

use checks::{company_of, digest_mismatches, executed_twice, lost, queue_peaks, quiet};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use process::{Server, data_dir, serve, signal};
use setup::{busybox_context, directory, prepare};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};
use writers::World;

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

#[tokio::test]
async fn acknowledged_writes_survive_a_crash_loop() {
    let seconds = setting("CRASH_LOOP_SECONDS", 20);
    let workers = setting("CRASH_LOOP_WORKERS", 4) as usize;
    let data = data_dir();
    let mut server = start(data.path()).await;
    let url = database_url(data.path());
    let pool = projections::db::connect(&url, 4).await.unwrap();
    let (token, room) = directory(&pool).await;
    let (version, table, column) =
        prepare(&server.base, &token, busybox_context(&[]), "echo hi\n").await;
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
