//! What must hold after the loop: nothing acknowledged lost, nothing run twice,
//! queue limits kept, the log verifiable and every projection equal to a rebuild.

use crate::writers::Acknowledged;
use projections::read_models;
use projections::rebuild::{Outcome, Rebuild, Target};
use sqlx::PgPool;
use std::collections::{BTreeSet, HashMap};
use std::time::{Duration, Instant};
use tokio_util::sync::CancellationToken;

/// Waits until the service is quiet: every run has ended and the log's head,
/// fully projected, stays where it is for a second.
pub(crate) async fn quiet(pool: &PgPool) -> i64 {
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
pub(crate) async fn caught_up(pool: &PgPool) -> i64 {
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
pub(crate) async fn lost(pool: &PgPool, acknowledged: &Acknowledged) -> Vec<String> {
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
pub(crate) async fn executed_twice(pool: &PgPool) -> Vec<String> {
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
pub(crate) async fn queue_peaks(pool: &PgPool) -> (i64, i64) {
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
            "RunClaimed" | "RunReattached" | "RunStarted" | "RunCancelRequested" => "active",
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
pub(crate) async fn digest_mismatches(pool: &PgPool, head: i64) -> Vec<String> {
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

pub(crate) async fn company_of(pool: &PgPool) -> uuid::Uuid {
    let id: String = sqlx::query_scalar(
        "SELECT aggregate_id FROM events WHERE aggregate_type = 'company' LIMIT 1",
    )
    .fetch_one(pool)
    .await
    .unwrap();
    id.parse().unwrap()
}
