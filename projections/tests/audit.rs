//! Export and chain verification against a real database.

use chrono::Utc;
use domain::directory::company::{Company, CompanyCommand};
use domain::directory::user::{User, UserCommand};
use domain::principal::{Actor, EventMetadata};
use projections::audit::export::{ExportFilter, Exporter};
use projections::audit::verify::{Expectation, verify};
use projections::pump::PumpConfig;
use projections::sealer::CHAIN_CHECKPOINT_EVERY;
use projections::store::LogRepository;
use projections::testing::TestDatabase;
use projections::{CommandBus, Pump, read_models};
use sqlx::PgPool;
use uuid::Uuid;

fn meta(company: Option<Uuid>) -> EventMetadata {
    EventMetadata {
        actor: Actor::Operator("test".into()),
        company_id: company,
        request_id: "test".into(),
        time: Utc::now(),
    }
}

/// Two companies with three users each: 8 events, sealed.
async fn seeded() -> (TestDatabase, CommandBus, [Uuid; 2]) {
    let db = TestDatabase::fresh().await;
    let pump = Pump::new(db.pool.clone(), read_models::all(), PumpConfig::default());
    pump.start(tokio_util::sync::CancellationToken::new())
        .await
        .unwrap();
    let bus = CommandBus::new(LogRepository::new(db.pool.clone()), pump);
    let companies = [Uuid::new_v4(), Uuid::new_v4()];
    for (n, company) in companies.iter().enumerate() {
        let define = CompanyCommand::Define {
            company_id: *company,
            name: format!("c{n}"),
        };
        bus.execute::<Company>(&company.to_string(), define, &meta(None))
            .await
            .unwrap();
        for u in 0..3 {
            let user = Uuid::new_v4();
            let define = UserCommand::Define {
                user_id: user,
                company_id: *company,
                username: format!("u{u}"),
                role: 1,
            };
            bus.execute::<User>(&user.to_string(), define, &meta(None))
                .await
                .unwrap();
        }
    }
    (db, bus, companies)
}

async fn export(pool: &PgPool, filter: ExportFilter) -> Vec<i64> {
    let mut conn = pool.acquire().await.unwrap();
    let mut exporter = Exporter::start(&mut conn, filter).await.unwrap();
    let mut positions = Vec::new();
    loop {
        let page = exporter.next_page(&mut conn).await.unwrap();
        if page.is_empty() {
            return positions;
        }
        positions.extend(page.iter().map(|e| e.position));
    }
}

async fn verified(pool: &PgPool, expect: &[Expectation]) -> projections::audit::Verification {
    let mut conn = pool.acquire().await.unwrap();
    verify(&mut conn, expect, |_| {}).await.unwrap()
}

#[tokio::test]
async fn export_filters_by_range_aggregate_and_company() {
    let (db, _bus, companies) = seeded().await;
    assert_eq!(
        export(&db.pool, ExportFilter::default()).await,
        (1..=8).collect::<Vec<_>>()
    );
    let range = ExportFilter {
        from: Some(3),
        to: Some(5),
        ..ExportFilter::default()
    };
    assert_eq!(export(&db.pool, range).await, vec![3, 4, 5]);
    let companies_only = ExportFilter {
        aggregate_type: Some("company".into()),
        ..ExportFilter::default()
    };
    assert_eq!(export(&db.pool, companies_only).await, vec![1, 5]);
    let second = ExportFilter {
        company: Some(companies[1].to_string()),
        ..ExportFilter::default()
    };
    assert_eq!(export(&db.pool, second).await, vec![5, 6, 7, 8]);
    let one = ExportFilter {
        aggregate_id: Some(companies[0].to_string()),
        ..ExportFilter::default()
    };
    assert_eq!(export(&db.pool, one).await, vec![1]);
}

#[tokio::test]
async fn verify_names_the_position_of_an_edited_payload() {
    let (db, _bus, _) = seeded().await;
    let clean = verified(&db.pool, &[]).await;
    assert_eq!(clean.verified, 8);
    assert!(clean.broken.is_none());
    sqlx::query(
        "UPDATE events SET payload = replace(payload::text, '\"role\":1', '\"role\":5')::json WHERE position = 6",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let tampered = verified(&db.pool, &[]).await;
    let broken = tampered.broken.expect("the edit is detected");
    assert_eq!(broken.position, 6, "{broken}");
    assert_eq!(tampered.verified, 5);
}

#[tokio::test]
async fn a_deleted_event_and_a_rewritten_chain_are_detected() {
    let (db, _bus, _) = seeded().await;
    let kept = verified(&db.pool, &[]).await;
    let head = Expectation {
        position: kept.verified,
        hash: kept.hash.clone(),
    };
    // Deleting a row leaves a gap in positions.
    sqlx::query("DELETE FROM events WHERE position = 4")
        .execute(&db.pool)
        .await
        .unwrap();
    let broken = verified(&db.pool, &[]).await.broken.unwrap();
    assert_eq!(broken.position, 4, "{broken}");
    assert!(broken.reason.contains("missing"), "{broken}");

    // Renumbering the tail and recomputing every hash hides the deletion from the
    // chain itself, but not from a head hash kept elsewhere.
    sqlx::query("UPDATE events SET position = -position WHERE position > 4")
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query("UPDATE events SET position = -position - 1 WHERE position < 0")
        .execute(&db.pool)
        .await
        .unwrap();
    rechain(&db.pool).await;
    assert!(verified(&db.pool, &[]).await.broken.is_none());
    let broken = verified(&db.pool, &[head]).await.broken.unwrap();
    assert_eq!(broken.position, 8, "{broken}");
    assert!(broken.reason.contains("deleted from the end"), "{broken}");
}

#[tokio::test]
async fn a_rewritten_chain_disagrees_with_a_kept_checkpoint() {
    let (db, _bus, _) = seeded().await;
    let kept = verified(&db.pool, &[]).await;
    sqlx::query(
        "UPDATE events SET payload = replace(payload::text, '\"u1\"', '\"mallory\"')::json WHERE position = 3",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    rechain(&db.pool).await;
    assert!(verified(&db.pool, &[]).await.broken.is_none());
    let expect = Expectation {
        position: 8,
        hash: kept.hash,
    };
    let broken = verified(&db.pool, &[expect]).await.broken.unwrap();
    assert_eq!(broken.position, 8, "{broken}");
}

#[tokio::test]
async fn the_sealer_records_a_chain_checkpoint_every_ten_thousand_events() {
    let db = TestDatabase::fresh().await;
    sqlx::query(
        "INSERT INTO events (aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata)
         SELECT 'probe', 'p', n, 'Probed', '1', '{}', '{}' FROM generate_series(1, $1) AS n",
    )
    .bind(CHAIN_CHECKPOINT_EVERY + 5)
    .execute(&db.pool)
    .await
    .unwrap();
    let pump = Pump::new(db.pool.clone(), vec![], PumpConfig::default());
    while projections::log::head(&mut db.pool.acquire().await.unwrap())
        .await
        .unwrap()
        < CHAIN_CHECKPOINT_EVERY + 5
    {
        pump.drain().await;
    }
    let checkpoints: Vec<i64> = sqlx::query_scalar("SELECT position FROM chain_checkpoints")
        .fetch_all(&db.pool)
        .await
        .unwrap();
    assert_eq!(checkpoints, vec![CHAIN_CHECKPOINT_EVERY]);
    let verification = verified(&db.pool, &[]).await;
    assert!(verification.broken.is_none());
    assert_eq!(verification.anchors_checked, 1);
}

/// One stored event as the chain hashes it: position, aggregate type and id,
/// sequence, event type and version, payload, metadata.
type ChainRow = (
    i64,
    String,
    String,
    i64,
    String,
    String,
    serde_json::Value,
    serde_json::Value,
);

/// Recomputes every stored hash, as a forger with write access would.
async fn rechain(pool: &PgPool) {
    let rows: Vec<ChainRow> =
        sqlx::query_as(
            "SELECT position, aggregate_type, aggregate_id, sequence, event_type, event_version, payload, metadata
               FROM events ORDER BY position",
        )
        .fetch_all(pool)
        .await
        .unwrap();
    let mut previous = projections::chain::GENESIS.to_vec();
    for (
        position,
        aggregate_type,
        aggregate_id,
        sequence,
        event_type,
        event_version,
        payload,
        metadata,
    ) in rows
    {
        let hash = projections::chain::link(
            &previous,
            &projections::chain::ChainInput {
                position,
                aggregate_type: &aggregate_type,
                aggregate_id: &aggregate_id,
                sequence,
                event_type: &event_type,
                event_version: &event_version,
                payload: &payload,
                metadata: &metadata,
            },
        );
        sqlx::query("UPDATE events SET chain_hash = $2 WHERE position = $1")
            .bind(position)
            .bind(hash.to_vec())
            .execute(pool)
            .await
            .unwrap();
        previous = hash.to_vec();
    }
}

/// A log sealed under the first chain rule (task version contents hashed by their
/// text) is re-linked once from its first task version event; the old head is
/// kept, the chain verifies, and a second start changes nothing.
#[tokio::test]
async fn a_log_sealed_before_epoch_two_is_relinked_once() {
    use domain::tasks::contents::VersionContents;
    use domain::tasks::version::{TaskVersion, TaskVersionCommand, TaskVersionDrafted};
    let (db, bus, companies) = seeded().await;
    let version_id = Uuid::new_v4();
    let drafted = TaskVersionDrafted {
        version_id,
        task_id: Uuid::new_v4(),
        company_id: companies[0],
        version_number: 1,
        contents: VersionContents {
            environment_version_id: Uuid::new_v4(),
            startup_script: String::new(),
            work_script: "echo old\n".into(),
            ordinary_env: Default::default(),
            input_instructions: None,
            input_example: None,
            input_schema: None,
            work_command: None,
            timeout_seconds: 60,
            secret_slot_declarations: Vec::new(),
            requires_confirmation: false,
            output_policy: None,
            bundle: None,
        },
    };
    bus.execute::<TaskVersion>(
        &version_id.to_string(),
        TaskVersionCommand::Draft(drafted),
        &meta(Some(companies[0])),
    )
    .await
    .unwrap();
    let define = CompanyCommand::Define {
        company_id: Uuid::new_v4(),
        name: "after".into(),
    };
    bus.execute::<Company>(&Uuid::new_v4().to_string(), define, &meta(None))
        .await
        .unwrap();
    let first: i64 =
        sqlx::query_scalar("SELECT position FROM events WHERE aggregate_type = 'task_version'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    // What an older server left: other hashes from the task version on, no epoch.
    sqlx::query("UPDATE events SET chain_hash = sha256(chain_hash) WHERE position >= $1")
        .bind(first)
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query("DELETE FROM chain_epochs")
        .execute(&db.pool)
        .await
        .unwrap();
    let old_head: Vec<u8> =
        sqlx::query_scalar("SELECT chain_hash FROM events ORDER BY position DESC LIMIT 1")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(
        verified(&db.pool, &[]).await.broken.unwrap().position,
        first
    );

    assert_eq!(
        projections::chain_epoch::upgrade(&db.pool).await.unwrap(),
        Some(first)
    );
    assert_eq!(verified(&db.pool, &[]).await.broken, None);
    let (from, previous): (i64, Vec<u8>) = sqlx::query_as(
        "SELECT from_position, previous_head_hash FROM chain_epochs WHERE epoch = 2",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!((from, previous), (first, old_head));
    assert_eq!(
        projections::chain_epoch::upgrade(&db.pool).await.unwrap(),
        None
    );
}
