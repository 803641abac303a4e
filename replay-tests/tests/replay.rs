//! Every recorded log replays into the read models recorded beside it, the same way
//! every time, and old event versions replay like their new form.
//!
//! `REPLAY_BLESS=1 cargo test -p replay-tests` rewrites the expected read models
//! after a deliberate change; review the diff before committing it.

use domain::directory::chatroom::Chatroom;
use projections::pump::PumpConfig;
use projections::rebuild::{MEMORY_FOLD_ROWS, Outcome, Rebuild, Target};
use projections::store::LogRepository;
use projections::testing::TestDatabase;
use projections::{CommandBus, Pump};
use replay_tests::{digests, expected_dir, logs_dir, read_log, read_models, recorded_logs, replay};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

async fn replayed(events: &[projections::audit::ExportedEvent], batch: i64) -> TestDatabase {
    let db = TestDatabase::fresh().await;
    replay(&db.pool, events, batch).await.unwrap();
    db
}

#[tokio::test]
async fn every_recorded_log_produces_its_recorded_read_models() {
    let bless = std::env::var_os("REPLAY_BLESS").is_some();
    for (name, path) in recorded_logs().unwrap() {
        let events = read_log(&path).unwrap();
        let db = replayed(&events, 5_000).await;
        let got = read_models(&db.pool).await.unwrap();
        let file = expected_dir().join(format!("{name}.json"));
        if bless {
            let text = serde_json::to_string_pretty(&got).unwrap() + "\n";
            std::fs::write(&file, text).unwrap();
            continue;
        }
        let text = std::fs::read_to_string(&file)
            .unwrap_or_else(|_| panic!("{} is missing: run with REPLAY_BLESS=1", file.display()));
        let expected: std::collections::BTreeMap<String, Vec<Value>> =
            serde_json::from_str(&text).unwrap();
        assert_eq!(got, expected, "read models of {name}");
    }
}

/// The same log twice, and in batches of one event, gives byte-identical read models.
#[tokio::test]
async fn replay_is_deterministic() {
    for (name, path) in recorded_logs().unwrap() {
        let events = read_log(&path).unwrap();
        let first = digests(&replayed(&events, 5_000).await.pool).await.unwrap();
        let second = digests(&replayed(&events, 5_000).await.pool).await.unwrap();
        let one_by_one = digests(&replayed(&events, 1).await.pool).await.unwrap();
        assert_eq!(first, second, "{name} replayed twice");
        assert_eq!(first, one_by_one, "{name} replayed one event at a time");
    }
}

/// A rebuild gives the read models the pump built: folded in memory from the first
/// event to the last, and switching to batches once its memory holds one row.
#[tokio::test]
async fn a_rebuild_folded_in_memory_gives_the_read_models_the_pump_built() {
    for (name, path) in recorded_logs().unwrap() {
        let events = read_log(&path).unwrap();
        let db = replayed(&events, 5_000).await;
        let built = digests(&db.pool).await.unwrap();
        let folding = projections::read_models::all()
            .into_iter()
            .filter(|projection| projection.memory_fold().is_some());
        for projection in folding {
            for memory_rows in [MEMORY_FOLD_ROWS, 1] {
                let outcome = Rebuild::start(&db.pool, projection.clone(), Target::Swap)
                    .await
                    .unwrap()
                    .with_batch(2)
                    .with_memory_rows(memory_rows)
                    .run(&CancellationToken::new(), |_, _| {})
                    .await
                    .unwrap();
                assert!(matches!(outcome, Outcome::Swapped(_)), "{outcome:?}");
                assert_eq!(
                    digests(&db.pool).await.unwrap(),
                    built,
                    "{name}: {} rebuilt with a bound of {memory_rows} rows",
                    projection.name()
                );
            }
        }
    }
}

/// A log recorded with `ChatroomRegistered` v1 (no `archived`) loads through the
/// command bus and projects through the pump exactly like the same log in v2.
#[tokio::test]
async fn an_old_event_version_loads_and_projects_like_its_new_form() {
    let old = read_log(&logs_dir().join("upcast/chatroom-registered-v1.jsonl")).unwrap();
    let new = read_log(&logs_dir().join("upcast/chatroom-registered-v2.jsonl")).unwrap();
    assert_eq!(old[2].event_version, "1");
    assert_eq!(new[2].event_version, "2");
    let room = old[2].aggregate_id.clone();
    let (old_db, new_db) = (replayed(&old, 5_000).await, replayed(&new, 5_000).await);
    assert_eq!(
        read_models(&old_db.pool).await.unwrap(),
        read_models(&new_db.pool).await.unwrap()
    );
    let load = |db: &TestDatabase| {
        let pool = db.pool.clone();
        let room = room.clone();
        async move {
            let pump = Pump::new(
                pool.clone(),
                projections::read_models::all(),
                PumpConfig::default(),
            );
            CommandBus::new(LogRepository::new(pool), pump)
                .load::<Chatroom>(&room)
                .await
                .unwrap()
        }
    };
    let (from_old, from_new) = (load(&old_db).await, load(&new_db).await);
    assert_eq!(from_old, from_new);
    assert!(from_old.archived && from_old.members.len() == 1);
}
