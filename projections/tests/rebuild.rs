//! Rebuilds against a real database: swap, interruption, point in time, writes
//! during a rebuild.

use chrono::Utc;
use domain::directory::chatroom::{Chatroom, ChatroomCommand};
use domain::directory::company::{Company, CompanyCommand};
use domain::directory::user::{User, UserCommand};
use domain::principal::{Actor, EventMetadata};
use projections::pump::PumpConfig;
use projections::rebuild::{self, Outcome, Rebuild, Target};
use projections::store::LogRepository;
use projections::testing::TestDatabase;
use projections::{CommandBus, Projection, Pump, read_models};
use sqlx::PgPool;
use std::collections::BTreeMap;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

fn meta() -> EventMetadata {
    EventMetadata {
        actor: Actor::Operator("test".into()),
        company_id: None,
        request_id: "test".into(),
        time: Utc::now(),
    }
}

async fn bus(pool: &PgPool) -> CommandBus {
    let pump = Pump::new(pool.clone(), read_models::all(), PumpConfig::default());
    pump.start(CancellationToken::new()).await.unwrap();
    CommandBus::new(LogRepository::new(pool.clone()), pump)
}

fn directory() -> Arc<dyn Projection> {
    read_models::all()
        .into_iter()
        .find(|p| p.name() == "directory")
        .unwrap()
}

/// A company with `users` users, each in a room.
async fn populate(bus: &CommandBus, users: usize) -> Uuid {
    let company = Uuid::new_v4();
    bus.execute::<Company>(
        &company.to_string(),
        CompanyCommand::Define {
            company_id: company,
            name: "Acme".into(),
        },
        &meta(),
    )
    .await
    .unwrap();
    let room = Uuid::new_v4();
    bus.execute::<Chatroom>(
        &room.to_string(),
        ChatroomCommand::Define {
            chatroom_id: room,
            company_id: company,
            name: "lab".into(),
            department_id: None,
            archived: false,
        },
        &meta(),
    )
    .await
    .unwrap();
    add_users(bus, company, users).await;
    company
}

async fn add_users(bus: &CommandBus, company: Uuid, users: usize) {
    for n in 0..users {
        let user = Uuid::new_v4();
        bus.execute::<User>(
            &user.to_string(),
            UserCommand::Define {
                user_id: user,
                company_id: company,
                username: format!("u{n}"),
                role: (n % 4) as i32,
            },
            &meta(),
        )
        .await
        .unwrap();
    }
}

async fn digest(pool: &PgPool, schema: &str) -> BTreeMap<String, String> {
    let mut conn = pool.acquire().await.unwrap();
    projections::digest::digest(&mut conn, schema, directory().tables())
        .await
        .unwrap()
}

async fn index_names(pool: &PgPool) -> Vec<String> {
    sqlx::query_scalar(
        "SELECT indexname::text FROM pg_indexes WHERE schemaname = 'public' ORDER BY 1",
    )
    .fetch_all(pool)
    .await
    .unwrap()
}

#[tokio::test]
async fn a_rebuild_swaps_in_an_equal_model_with_the_same_index_names() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool).await;
    populate(&bus, 30).await;
    let before = digest(&db.pool, "public").await;
    let indexes = index_names(&db.pool).await;
    let job = Rebuild::start(&db.pool, directory(), Target::Swap)
        .await
        .unwrap()
        .with_batch(7);
    let mut steps = 0;
    let outcome = job
        .run(&CancellationToken::new(), |_, _| steps += 1)
        .await
        .unwrap();
    assert_eq!(outcome, Outcome::Swapped(32));
    assert!(steps > 2, "the rebuild went in batches");
    assert_eq!(digest(&db.pool, "public").await, before);
    assert_eq!(index_names(&db.pool).await, indexes);
    let schemas: i64 =
        sqlx::query_scalar("SELECT count(*) FROM pg_namespace WHERE nspname LIKE 'rebuild_%'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(schemas, 0, "the shadow schema is gone");
    let position: i64 =
        sqlx::query_scalar("SELECT position FROM projection_checkpoints WHERE name = 'directory'")
            .fetch_one(&db.pool)
            .await
            .unwrap();
    assert_eq!(position, 32);
}

#[tokio::test]
async fn an_interrupted_rebuild_is_resumed_or_discarded_and_live_stays_intact() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool).await;
    populate(&bus, 20).await;
    let before = digest(&db.pool, "public").await;

    // Interrupted after its first batch.
    let cancel = CancellationToken::new();
    let job = Rebuild::start(&db.pool, directory(), Target::Swap)
        .await
        .unwrap()
        .with_batch(5);
    let outcome = job.run(&cancel, |_, _| cancel.cancel()).await.unwrap();
    assert_eq!(outcome, Outcome::Interrupted(5));
    assert_eq!(digest(&db.pool, "public").await, before);
    let mut conn = db.pool.acquire().await.unwrap();
    let status = rebuild::status(&mut conn, &[directory()]).await.unwrap();
    let shown = status[0].rebuild.clone().expect("the rebuild is shown");
    assert_eq!((shown.position, shown.running), (5, false));
    let again = Rebuild::start(&db.pool, directory(), Target::Swap).await;
    assert!(again.err().unwrap().to_string().contains("--resume"));

    // Resumed: it carries on from 5 and swaps.
    let job = Rebuild::resume(&db.pool, directory()).await.unwrap();
    assert_eq!(job.position(), 5);
    let outcome = job.run(&CancellationToken::new(), |_, _| {}).await.unwrap();
    assert_eq!(outcome, Outcome::Swapped(22));
    assert_eq!(digest(&db.pool, "public").await, before);

    // Discarded: the shadow goes, live stays.
    let cancel = CancellationToken::new();
    let job = Rebuild::start(&db.pool, directory(), Target::Swap)
        .await
        .unwrap()
        .with_batch(5);
    job.run(&cancel, |_, _| cancel.cancel()).await.unwrap();
    assert!(
        Rebuild::discard(&db.pool, directory().as_ref())
            .await
            .unwrap()
    );
    assert!(
        !Rebuild::discard(&db.pool, directory().as_ref())
            .await
            .unwrap()
    );
    assert_eq!(digest(&db.pool, "public").await, before);
    let status = rebuild::status(&mut conn, &[directory()]).await.unwrap();
    assert!(status[0].rebuild.is_none());
}

#[tokio::test]
async fn a_point_in_time_build_shows_the_model_as_it_stood() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool).await;
    let company = populate(&bus, 10).await;
    let then = digest(&db.pool, "public").await;
    let at_time = Utc::now();
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    add_users(&bus, company, 5).await;
    assert_ne!(digest(&db.pool, "public").await, then);

    let target = Target::Until {
        position: 12,
        schema: "as_of_12".into(),
    };
    let job = Rebuild::start(&db.pool, directory(), target).await.unwrap();
    let outcome = job.run(&CancellationToken::new(), |_, _| {}).await.unwrap();
    assert_eq!(
        outcome,
        Outcome::Built {
            position: 12,
            schema: "as_of_12".into()
        }
    );
    assert_eq!(digest(&db.pool, "as_of_12").await, then);

    let mut conn = db.pool.acquire().await.unwrap();
    assert_eq!(rebuild::position_at(&mut conn, at_time).await.unwrap(), 12);
    let beyond = Target::Until {
        position: 1_000,
        schema: "later".into(),
    };
    assert!(Rebuild::start(&db.pool, directory(), beyond).await.is_err());
    let live = Target::Until {
        position: 3,
        schema: "public".into(),
    };
    assert!(Rebuild::start(&db.pool, directory(), live).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn writes_during_a_rebuild_are_in_the_swapped_model() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool).await;
    let company = populate(&bus, 40).await;
    let writer = {
        let bus = bus.clone();
        tokio::spawn(async move { add_users(&bus, company, 40).await })
    };
    let job = Rebuild::start(&db.pool, directory(), Target::Swap)
        .await
        .unwrap()
        .with_batch(3);
    let outcome = job
        .run(&CancellationToken::new(), |_, _| {
            std::thread::sleep(std::time::Duration::from_millis(5))
        })
        .await
        .unwrap();
    assert!(matches!(outcome, Outcome::Swapped(_)));
    writer.await.unwrap();
    bus.pump().drain().await;
    let users: i64 = sqlx::query_scalar("SELECT count(*) FROM users")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    assert_eq!(users, 80);
    let head: i64 = sqlx::query_scalar("SELECT max(position) FROM events")
        .fetch_one(&db.pool)
        .await
        .unwrap();
    let check = Target::Until {
        position: head,
        schema: "check".into(),
    };
    Rebuild::start(&db.pool, directory(), check)
        .await
        .unwrap()
        .run(&CancellationToken::new(), |_, _| {})
        .await
        .unwrap();
    assert_eq!(
        digest(&db.pool, "public").await,
        digest(&db.pool, "check").await
    );
}

/// Crash recovery empties unlogged shadow tables: a rebuild whose last batch
/// committed before the server (re)started starts over rather than trusting its
/// checkpoint, and still swaps in an equal model.
#[tokio::test]
async fn a_rebuild_resumed_after_a_server_restart_starts_over() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool).await;
    populate(&bus, 20).await;
    let before = digest(&db.pool, "public").await;
    let cancel = CancellationToken::new();
    let job = Rebuild::start(&db.pool, directory(), Target::Swap)
        .await
        .unwrap()
        .with_batch(5);
    job.run(&cancel, |_, _| cancel.cancel()).await.unwrap();
    // As crash recovery would: the shadow is empty, and its last batch predates
    // the server's start.
    sqlx::query("TRUNCATE rebuild_directory.users, rebuild_directory.companies")
        .execute(&db.pool)
        .await
        .unwrap();
    sqlx::query(
        "UPDATE projection_rebuilds SET updated_at = pg_postmaster_start_time() - interval '1 second'",
    )
    .execute(&db.pool)
    .await
    .unwrap();
    let job = Rebuild::resume(&db.pool, directory()).await.unwrap();
    assert_eq!(job.position(), 0, "the checkpoint is not trusted");
    let outcome = job.run(&CancellationToken::new(), |_, _| {}).await.unwrap();
    assert_eq!(outcome, Outcome::Swapped(22));
    assert_eq!(digest(&db.pool, "public").await, before);
    let persistence: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT relpersistence::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
          WHERE n.nspname = 'public' AND c.relname = ANY($1)",
    )
    .bind(["users", "companies", "chatrooms"])
    .fetch_all(&db.pool)
    .await
    .unwrap();
    assert_eq!(persistence, ["p"], "swapped-in tables are logged");
}

/// A migration that runs while a rebuild is under way (here: an index added to a
/// live table) must survive it. The swap refuses copies made before the migration
/// and leaves the live tables as they are; the rebuild, resumed, starts over on
/// copies of today's tables and swaps in a model with the new index.
#[tokio::test]
async fn a_rebuild_whose_copies_predate_a_migration_starts_over_instead_of_losing_it() {
    let db = TestDatabase::fresh().await;
    let bus = bus(&db.pool).await;
    populate(&bus, 20).await;
    let before = digest(&db.pool, "public").await;
    let job = Rebuild::start(&db.pool, directory(), Target::Swap)
        .await
        .unwrap()
        .with_batch(5);
    sqlx::query("CREATE INDEX users_by_name ON users (username)")
        .execute(&db.pool)
        .await
        .unwrap();
    let refused = job
        .run(&CancellationToken::new(), |_, _| {})
        .await
        .unwrap_err();
    assert!(
        refused.to_string().contains("the indexes of users changed"),
        "{refused:#}"
    );
    assert!(
        index_names(&db.pool)
            .await
            .contains(&"users_by_name".to_string())
    );
    assert_eq!(
        digest(&db.pool, "public").await,
        before,
        "live is untouched"
    );

    // Interrupted after a batch, then migrated again: a resume starts over.
    let job = Rebuild::resume(&db.pool, directory()).await.unwrap();
    assert_eq!(
        job.position(),
        0,
        "copies of today's tables, from the start"
    );
    let cancel = CancellationToken::new();
    let job = job.with_batch(5);
    let outcome = job.run(&cancel, |_, _| cancel.cancel()).await.unwrap();
    assert!(
        matches!(outcome, Outcome::Interrupted(p) if p > 0),
        "{outcome:?}"
    );
    sqlx::query("ALTER TABLE chatrooms ADD COLUMN topic text NOT NULL DEFAULT ''")
        .execute(&db.pool)
        .await
        .unwrap();
    let job = Rebuild::resume(&db.pool, directory()).await.unwrap();
    assert_eq!(job.position(), 0, "the columns of chatrooms changed");
    let outcome = job.run(&CancellationToken::new(), |_, _| {}).await.unwrap();
    assert_eq!(outcome, Outcome::Swapped(22));
    assert!(
        index_names(&db.pool)
            .await
            .contains(&"users_by_name".to_string())
    );
    let topic: i64 = sqlx::query_scalar(
        "SELECT count(*) FROM information_schema.columns
          WHERE table_schema = 'public' AND table_name = 'chatrooms' AND column_name = 'topic'",
    )
    .fetch_one(&db.pool)
    .await
    .unwrap();
    assert_eq!(topic, 1, "the new column survived the swap");
}
