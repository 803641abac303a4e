//! The event store, sealer and pump against a real PostgreSQL database.

use chrono::Utc;
use domain::directory::company::{Company, CompanyCommand};
use domain::directory::user::{User, UserCommand};
use domain::principal::{Actor, EventMetadata};
use domain::settings::{CompanySettings, PolicyChanges, PolicyValues, SettingsCommand};
use projections::pump::PumpConfig;
use projections::read_models;
use projections::store::{LogRepository, SNAPSHOT_EVERY};
use projections::testing::TestDatabase;
use projections::{CommandBus, CommandError, Projection, Pump, StoredEvent};
use sqlx::{PgConnection, PgPool};
use std::sync::Arc;
use uuid::Uuid;

fn meta() -> EventMetadata {
    EventMetadata {
        actor: Actor::Operator("test".into()),
        company_id: None,
        request_id: "test".into(),
        time: Utc::now(),
    }
}

async fn bus(pool: &PgPool, projections: Vec<Arc<dyn Projection>>) -> CommandBus {
    let pump = Pump::new(pool.clone(), projections, PumpConfig::default());
    pump.start(tokio_util::sync::CancellationToken::new())
        .await
        .unwrap();
    CommandBus::new(LogRepository::new(pool.clone()), pump)
}

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

#[tokio::test]
async fn the_chain_links_every_sealed_event() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool, vec![]).await;
    for n in 0..3 {
        let id = Uuid::from_u128(n);
        bus.execute::<Company>(
            &id.to_string(),
            CompanyCommand::Define {
                company_id: id,
                name: "c".into(),
            },
            &meta(),
        )
        .await
        .unwrap();
    }
    bus.pump().drain().await;
    let rows: Vec<(StoredEventRow, Vec<u8>)> = sqlx::query_as::<_, StoredEventRow>(
        "SELECT position, aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata, chain_hash
           FROM events ORDER BY position",
    )
    .fetch_all(&db.pool)
    .await
    .unwrap()
    .into_iter()
    .map(|r| {
        let hash = r.chain_hash.clone();
        (r, hash)
    })
    .collect();
    let mut previous = projections::chain::GENESIS.to_vec();
    for (row, hash) in rows {
        let expected = projections::chain::link(
            &previous,
            &projections::chain::ChainInput {
                position: row.position,
                aggregate_type: &row.aggregate_type,
                aggregate_id: &row.aggregate_id,
                sequence: row.sequence,
                event_type: &row.event_type,
                event_version: &row.event_version,
                payload: &row.payload,
                metadata: &row.metadata,
            },
        );
        assert_eq!(hash, expected.to_vec());
        previous = hash;
    }
}

#[derive(sqlx::FromRow)]
struct StoredEventRow {
    position: i64,
    aggregate_type: String,
    aggregate_id: String,
    sequence: i64,
    event_type: String,
    event_version: String,
    payload: serde_json::Value,
    metadata: serde_json::Value,
    chain_hash: Vec<u8>,
}

/// `execute` returns only once the read models show the command's events.
#[tokio::test]
async fn execute_reads_its_own_writes() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool, read_models::all()).await;
    let company = Uuid::new_v4();
    let user = Uuid::new_v4();
    bus.execute::<User>(
        &user.to_string(),
        UserCommand::Define {
            user_id: user,
            company_id: company,
            username: "ann".into(),
            role: 3,
        },
        &meta(),
    )
    .await
    .unwrap();
    let role: i32 = sqlx::query_scalar("SELECT role FROM users WHERE id = $1")
        .bind(user)
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(role, 3);
    let checkpoints: Vec<i64> = sqlx::query_scalar("SELECT position FROM projection_checkpoints")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert!(checkpoints.iter().all(|p| *p == 1), "{checkpoints:?}");
}

/// A second writer racing on the same aggregate makes one command retry on a fresh
/// load; both changes land.
#[tokio::test]
async fn concurrent_commands_on_one_aggregate_both_land_or_conflict() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool, vec![]).await;
    let company = Uuid::new_v4();
    let id = company.to_string();
    let defaults = PolicyValues::defaults(&["onprem".into()]);
    bus.execute::<CompanySettings>(
        &id,
        SettingsCommand::RecordDefault {
            company_id: company,
            defaults: defaults.clone(),
        },
        &meta(),
    )
    .await
    .unwrap();
    let attempts: Vec<_> = (0..8)
        .map(|i| {
            let bus = bus.clone();
            let id = id.clone();
            let command = SettingsCommand::Update {
                company_id: company,
                defaults: defaults.clone(),
                expected_policy_version: 1,
                changes: PolicyChanges {
                    run_content_retention_days: Some(10 + i),
                    ..PolicyChanges::default()
                },
            };
            tokio::spawn(async move { bus.execute::<CompanySettings>(&id, command, &meta()).await })
        })
        .collect();
    let mut won = 0;
    for attempt in attempts {
        match attempt.await.unwrap() {
            Ok(_) => won += 1,
            Err(CommandError::Rejected(_)) | Err(CommandError::Conflict) => {}
            Err(other) => panic!("unexpected {other}"),
        }
    }
    assert_eq!(
        won, 1,
        "exactly one writer wins the optimistic lock on policy_version 1"
    );
}

/// State loaded from a snapshot plus the tail equals a full replay.
#[tokio::test]
async fn snapshot_state_equals_full_replay() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool, vec![]).await;
    let company = Uuid::new_v4();
    let id = company.to_string();
    let defaults = PolicyValues::defaults(&["onprem".into()]);
    bus.append::<CompanySettings>(
        &id,
        SettingsCommand::RecordDefault {
            company_id: company,
            defaults: defaults.clone(),
        },
        &meta(),
    )
    .await
    .unwrap();
    for version in 1..(SNAPSHOT_EVERY as i64 + 20) {
        let command = SettingsCommand::Update {
            company_id: company,
            defaults: defaults.clone(),
            expected_policy_version: version,
            changes: PolicyChanges {
                run_content_retention_days: Some((version % 300 + 1) as i32),
                ..PolicyChanges::default()
            },
        };
        bus.append::<CompanySettings>(&id, command, &meta())
            .await
            .unwrap();
    }
    let snapshot_seq: i64 =
        sqlx::query_scalar("SELECT last_sequence FROM aggregate_snapshots WHERE aggregate_id = $1")
            .bind(&id)
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(snapshot_seq, SNAPSHOT_EVERY as i64);
    let from_snapshot = bus.load::<CompanySettings>(&id).await.unwrap();
    sqlx::query("DELETE FROM aggregate_snapshots")
        .execute(&db.pool)
        .await
        .unwrap();
    let full_replay = bus.load::<CompanySettings>(&id).await.unwrap();
    assert_eq!(from_snapshot, full_replay);
    assert_eq!(full_replay.policy_version, SNAPSHOT_EVERY as i64 + 20);
}

struct Failing;

#[async_trait::async_trait]
impl Projection for Failing {
    fn name(&self) -> &'static str {
        "failing"
    }
    fn tables(&self) -> &'static [&'static str] {
        &[]
    }
    fn aggregate_types(&self) -> &'static [&'static str] {
        &["user"]
    }
    async fn apply(&self, conn: &mut PgConnection, _: &[StoredEvent]) -> anyhow::Result<()> {
        sqlx::query("SELECT * FROM no_such_table")
            .execute(conn)
            .await?;
        Ok(())
    }
}

/// A broken projection is rolled back to its savepoint and marked failing; the others
/// keep projecting and writers are not blocked by it.
#[tokio::test]
async fn a_failing_projection_does_not_stop_the_others() {
    let db = TestDatabase::fresh().await;
    let mut projections = read_models::all();
    projections.insert(0, Arc::new(Failing));
    let bus = bus(&db.pool, projections).await;
    let user = Uuid::new_v4();
    bus.execute::<User>(
        &user.to_string(),
        UserCommand::Define {
            user_id: user,
            company_id: Uuid::new_v4(),
            username: "bo".into(),
            role: 1,
        },
        &meta(),
    )
    .await
    .unwrap();
    let (position, error): (i64, Option<String>) = sqlx::query_as(
        "SELECT position, last_error FROM projection_checkpoints WHERE name = 'failing'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(position, 0);
    assert!(error.unwrap().contains("no_such_table"));
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(users, 1);
}
