//! The sealer against a real PostgreSQL database: late commits, foreign
//! transactions, the ordered read of unsealed rows, the seal floor and gap-free
//! positions.

use projections::Pump;
use projections::pump::PumpConfig;
use projections::testing::TestDatabase;
use sqlx::{PgConnection, PgPool};

async fn insert_raw(conn: &mut PgConnection, id: &str) {
    sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         VALUES ('probe', $1, 1, 'Probed', '1', '{}', '{}')",
    )
    .bind(id)
    .execute(conn)
    .await
    .unwrap();
}

async fn sealed(pool: &PgPool) -> Vec<(String, i64)> {
    sqlx::query_as(
        "SELECT aggregate_id, position FROM events WHERE position IS NOT NULL ORDER BY position",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

/// A transaction that appended first but commits last is never skipped: it is
/// sealed after everything sealed before its commit, and it holds nothing back while
/// it is open.
#[tokio::test]
async fn a_late_commit_is_never_skipped() {
    let db = TestDatabase::fresh().await;
    let pump = Pump::new(db.pool.clone(), vec![], PumpConfig::default());
    let mut slow = db.pool.begin().await.unwrap();
    insert_raw(&mut slow, "slow").await;
    let mut fast = db.pool.begin().await.unwrap();
    insert_raw(&mut fast, "fast").await;
    fast.commit().await.unwrap();

    pump.cycle().await.unwrap();
    assert_eq!(
        sealed(&db.pool).await,
        vec![("fast".into(), 1)],
        "a committed append is sealed while an older one is still open"
    );

    slow.commit().await.unwrap();
    pump.cycle().await.unwrap();
    assert_eq!(
        sealed(&db.pool).await,
        vec![("fast".into(), 1), ("slow".into(), 2)]
    );
    let mut conn = db.pool.acquire().await.unwrap();
    let after_first = projections::log::read_range(&mut conn, 1, 2).await.unwrap();
    assert_eq!(after_first.len(), 1);
    assert_eq!(
        after_first[0].aggregate_id, "slow",
        "a reader after position 1 sees the late commit"
    );
}

async fn floor<'e>(executor: impl sqlx::PgExecutor<'e>) -> i64 {
    sqlx::query_scalar("SELECT append_seq FROM seal_floor")
        .fetch_one(executor)
        .await
        .unwrap()
}

async fn append_seq<'e>(executor: impl sqlx::PgExecutor<'e>, id: &str) -> i64 {
    sqlx::query_scalar("SELECT append_seq FROM events WHERE aggregate_id = $1")
        .bind(id)
        .fetch_one(executor)
        .await
        .unwrap()
}

/// The seal floor moves past what was sealed, so a pass no longer walks the index
/// entries of sealed rows; an append still open holds it at its own row, however many
/// later appends are sealed meanwhile, and is sealed when it commits.
#[tokio::test]
async fn the_seal_floor_never_passes_an_open_append() {
    let db = TestDatabase::fresh().await;
    let pump = Pump::new(db.pool.clone(), vec![], PumpConfig::default());
    let mut conn = db.pool.acquire().await.unwrap();
    insert_raw(&mut conn, "early").await;
    pump.cycle().await.unwrap();
    let early = append_seq(&db.pool, "early").await;
    floor_passes(&pump, &mut conn, early, "before").await;

    let mut slow = db.pool.begin().await.unwrap();
    insert_raw(&mut slow, "slow").await;
    let slow_seq = append_seq(&mut *slow, "slow").await;
    for round in 0..5 {
        insert_raw(&mut conn, &format!("late-{round}")).await;
        pump.cycle().await.unwrap();
    }
    assert!(
        floor(&db.pool).await <= slow_seq,
        "the floor stays at or below an open append ({} > {slow_seq})",
        floor(&db.pool).await
    );
    slow.commit().await.unwrap();
    pump.cycle().await.unwrap();
    let ids: Vec<String> = sealed(&db.pool).await.into_iter().map(|s| s.0).collect();
    assert_eq!(ids.last().map(String::as_str), Some("slow"));
    let late: Vec<&String> = ids.iter().filter(|id| id.starts_with("late")).collect();
    assert_eq!(late.len(), 5, "every append sealed once: {ids:?}");
    floor_passes(&pump, &mut conn, slow_seq, "after").await;
}

/// Appends and cycles until the floor passes `seq`: transactions of other tests,
/// anywhere in the cluster, hold it back for as long as they are open.
async fn floor_passes(pump: &Pump, conn: &mut PgConnection, seq: i64, round: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    for n in 0.. {
        insert_raw(conn, &format!("{round}-{n}")).await;
        pump.cycle().await.unwrap();
        let floor = floor(&mut *conn).await;
        if floor > seq {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the floor stays at {floor}, not past {seq}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// Transactions the service does not own (a write in another database of the
/// cluster, a temporary-table write in this one) hold no id the sealer waits for.
#[tokio::test]
async fn foreign_transactions_do_not_hold_sealing() {
    let db = TestDatabase::fresh().await;
    let other = TestDatabase::empty().await;
    sqlx::query("CREATE TABLE busy (n int)")
        .execute(&other.pool)
        .await
        .unwrap();
    let mut elsewhere = other.pool.begin().await.unwrap();
    sqlx::query("INSERT INTO busy VALUES (1)")
        .execute(&mut *elsewhere)
        .await
        .unwrap();
    let mut here = db.pool.begin().await.unwrap();
    for statement in [
        "CREATE TEMPORARY TABLE scratch (n int)",
        "INSERT INTO scratch VALUES (1)",
    ] {
        sqlx::query(statement).execute(&mut *here).await.unwrap();
    }
    let pump = Pump::new(db.pool.clone(), vec![], PumpConfig::default());
    let mut conn = db.pool.acquire().await.unwrap();
    insert_raw(&mut conn, "committed").await;
    pump.cycle().await.unwrap();
    assert_eq!(sealed(&db.pool).await, vec![("committed".into(), 1)]);
    elsewhere.rollback().await.unwrap();
    here.rollback().await.unwrap();
}

/// A backlog the planner's statistics do not know of (a bulk import that outran
/// autoanalyze) is still read in append order straight from the ordered index: the
/// sealer never fetches and sorts every unsealed row to take the first few. The
/// query of `events_unsealed_from` is planned here under the settings the function
/// declares, as PostgreSQL plans it inside the function.
#[tokio::test]
async fn the_unsealed_read_stays_an_ordered_index_scan_without_statistics() {
    let db = TestDatabase::fresh().await;
    sqlx::query("ALTER TABLE events SET (autovacuum_enabled = off)")
        .execute(&db.pool)
        .await
        .unwrap();
    for (kind, rows, sealed) in [("sealed", 3_000, true), ("backlog", 20_000, false)] {
        sqlx::query(
            "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version,
                                 payload, metadata, position)
             SELECT $1, g::text, 1, 'Probed', '1', '{}', '{}', CASE WHEN $3 THEN g END
               FROM generate_series(1, $2) g",
        )
        .bind(kind)
        .bind(rows)
        .bind(sealed)
        .execute(&db.pool)
        .await
        .unwrap();
    }
    let (body, settings): (String, Vec<String>) = sqlx::query_as(
        "SELECT prosrc, coalesce(proconfig, '{}') FROM pg_proc WHERE proname = 'events_unsealed_from'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    let mut tx = db.pool.begin().await.unwrap();
    for setting in &settings {
        let (name, value) = setting.split_once('=').unwrap();
        sqlx::query("SELECT set_config($1, $2, true)")
            .bind(name)
            .bind(value)
            .execute(&mut *tx)
            .await
            .unwrap();
    }
    let query = body
        .split_once("RETURN QUERY")
        .and_then(|(_, rest)| rest.split_once(';'))
        .expect("the function returns one query")
        .0
        .replace("LIMIT first", "LIMIT 5000")
        .replace("from_seq", "0");
    let plan: Vec<String> = sqlx::query_scalar(&format!("EXPLAIN {query}"))
        .fetch_all(&mut *tx)
        .await
        .unwrap();
    let plan = plan.join("\n");
    assert!(
        plan.contains("Index Scan using events_unsealed_order") && !plan.contains("Sort"),
        "the sealer's read is planned as:\n{plan}"
    );
    let unsealed: Vec<projections::sealer::Unsealed> =
        sqlx::query_as(projections::sealer::UNSEALED_SQL)
            .bind(3_i64)
            .fetch_all(&db.pool)
            .await
            .unwrap();
    let ids: Vec<&str> = unsealed
        .iter()
        .map(|row| row.aggregate_id.as_str())
        .collect();
    assert_eq!(
        ids,
        ["1", "2", "3"],
        "the first unsealed rows, in append order"
    );
}

/// Many concurrent appenders: positions are gap-free, unique and cover every event.
#[tokio::test]
async fn concurrent_appends_get_gap_free_positions() {
    let db = TestDatabase::fresh().await;
    let pump = Pump::new(db.pool.clone(), vec![], PumpConfig::default());
    let writers: Vec<_> = (0..16)
        .map(|w| {
            let pool = db.pool.clone();
            tokio::spawn(async move {
                for i in 0..25 {
                    let mut tx = pool.begin().await.unwrap();
                    insert_raw(&mut tx, &format!("{w}-{i}")).await;
                    tx.commit().await.unwrap();
                }
            })
        })
        .collect();
    let sealer = {
        let pump = pump.clone();
        tokio::spawn(async move {
            for _ in 0..50 {
                pump.cycle().await.unwrap();
            }
        })
    };
    for writer in writers {
        writer.await.unwrap();
    }
    sealer.await.unwrap();
    // Everything committed before this pass started is sealed by it.
    pump.drain().await;
    let positions: Vec<i64> = sealed(&db.pool).await.into_iter().map(|(_, p)| p).collect();
    assert_eq!(positions, (1..=400).collect::<Vec<_>>());
}
