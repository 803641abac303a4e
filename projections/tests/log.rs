//! The command bus, the hash chain and the pump against a real PostgreSQL database
//! (the sealer itself: `sealing.rs`).

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
