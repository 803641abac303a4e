//! (c): a 10-event command appended with one multi-row statement (our repository)
//! versus postgres-es's row-by-row insert, into the same table.

use cqrs_es::event_sink::EventSink;
use cqrs_es::persist::{PersistedEventRepository, SerializedEvent};
use cqrs_es::{Aggregate, DomainEvent};
use postgres_es::PostgresEventRepository;
use projections::store::LogRepository;
use serde::{Deserialize, Serialize};
use serde_json::json;
use sqlx::PgPool;
use std::time::{Duration, Instant};

/// An aggregate type no projection reads, so the benchmark's events stay inert.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
struct Bench;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Benched;

impl DomainEvent for Benched {
    fn event_type(&self) -> String {
        "Benched".into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

impl Aggregate for Bench {
    const TYPE: &'static str = "bench";
    type Command = ();
    type Event = Benched;
    type Error = std::convert::Infallible;
    type Services = ();

    async fn handle(&mut self, _: (), _: &(), _: &EventSink<Self>) -> Result<(), Self::Error> {
        Ok(())
    }

    fn apply(&mut self, _: Benched) {}
}

fn events(aggregate_id: &str, first: usize) -> Vec<SerializedEvent> {
    (0..10)
        .map(|i| {
            SerializedEvent::new(
                aggregate_id.to_string(),
                first + i,
                Bench::TYPE.to_string(),
                "Benched".into(),
                "1".into(),
                json!({"Benched": {"n": i}}),
                json!({"request_id": "bench"}),
            )
        })
        .collect()
}

/// Commands per second of (multi-row, row-by-row), one client each.
pub async fn ten_event_commands(pool: &PgPool, duration: Duration) -> anyhow::Result<(f64, f64)> {
    let ours = LogRepository::new(pool.clone());
    let theirs = PostgresEventRepository::new(pool.clone());
    let run = uuid::Uuid::new_v4();
    let multi = {
        let id = format!("{run}-multi");
        let (started, mut n) = (Instant::now(), 0);
        while started.elapsed() < duration {
            ours.append(&events(&id, n * 10 + 1)).await?;
            n += 1;
        }
        n as f64 / started.elapsed().as_secs_f64()
    };
    let single = {
        let id = format!("{run}-single");
        let (started, mut n) = (Instant::now(), 0);
        while started.elapsed() < duration {
            theirs
                .persist::<Bench>(&events(&id, n * 10 + 1), None)
                .await?;
            n += 1;
        }
        n as f64 / started.elapsed().as_secs_f64()
    };
    Ok((multi, single))
}
