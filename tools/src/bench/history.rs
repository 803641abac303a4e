//! `bench runs` (d): the reads that a long run history slows down when no index
//! serves them. `GET /runs` answers a page of every room the caller sees with its
//! exact total; a submission's answer carries the on-prem ETA, which reads the mean
//! duration of the profile's last 20 completed runs.
//!
//! The history is copies of one run that really ran: its events, under new run ids,
//! appended to the log directly (2,000 runs per statement) and projected by the
//! server's pump, as a replay would.

use super::report::Figure;
use super::server::Server;
use super::stats::percentile;
use anyhow::Context;
use cqrs_es::persist::SerializedEvent;
use projections::store::LogRepository;
use serde_json::Value;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Runs per append.
const CHUNK: usize = 2_000;

/// What (d) measured.
pub(super) struct History {
    /// Runs of history added.
    copies: usize,
    /// Runs appended and projected per second.
    per_second: f64,
    /// `GET /runs` pages, sorted.
    pages: Vec<Duration>,
    /// Answers of single submissions that stay queued (position and ETA), sorted.
    answers: Vec<Duration>,
}

/// Adds `copies` runs of history made from run `template`, then times pages of
/// `GET /runs` and ten single submissions held in the queue (`submit_held`).
pub(super) async fn measure(
    server: &Server,
    client: &reqwest::Client,
    template: Uuid,
    copies: usize,
    submit_held: impl AsyncFn() -> anyhow::Result<Vec<Duration>>,
) -> anyhow::Result<History> {
    let per_second = fill(server, template, copies).await?;
    let pages = pages(server, client, 50).await?;
    let mut answers = Vec::new();
    for _ in 0..10 {
        answers.extend(submit_held().await?);
    }
    answers.sort();
    Ok(History {
        copies,
        per_second,
        pages,
        answers,
    })
}

impl History {
    /// Prints (d)'s lines; answers its figures (no target of an issue).
    pub(super) fn report(&self) -> Vec<Figure> {
        let copies = self.copies;
        let ms = |sorted: &[Duration], q: f64| format!("{:.2} ms", percentile(sorted, q));
        println!(
            "(d) {copies} runs of history added through the log: {:.0} runs/s; GET /runs (page of 20 with its total) p50 {}, p95 {}; a submission's answer while it stays queued (its position and ETA) p50 {}, p95 {}",
            self.per_second,
            ms(&self.pages, 0.5),
            ms(&self.pages, 0.95),
            ms(&self.answers, 0.5),
            ms(&self.answers, 0.95),
        );
        let page = format!("runs (d) GET /runs page with total, {copies} runs of history");
        let answer = format!("runs (d) queued submission's answer, {copies} runs of history");
        vec![
            Figure::new(format!("{page}, p50"), ms(&self.pages, 0.5), "-"),
            Figure::new(format!("{page}, p95"), ms(&self.pages, 0.95), "-"),
            Figure::new(format!("{answer}, p50"), ms(&self.answers, 0.5), "-"),
        ]
    }
}

/// Appends `copies` runs made of the events of run `template` and waits until the
/// `runs` read model shows them (runs per second, the figure), then until every
/// projection caught up and `runs` is vacuumed.
async fn fill(server: &Server, template: Uuid, copies: usize) -> anyhow::Result<f64> {
    let pool = &server.state.pool;
    let events: Vec<(i64, String, String, Value, Value)> = sqlx::query_as(
        "SELECT sequence, event_type, event_version, payload, metadata FROM events
          WHERE aggregate_type = 'run' AND aggregate_id = $1 ORDER BY sequence",
    )
    .bind(template.to_string())
    .fetch_all(pool)
    .await?;
    anyhow::ensure!(!events.is_empty(), "run {template} has no events");
    let shown = || async {
        sqlx::query_scalar::<_, i64>("SELECT count(*) FROM runs WHERE company_id = $1")
            .bind(server.company_id)
            .fetch_one(pool)
            .await
    };
    let before = shown().await?;
    let repo = LogRepository::new(pool.clone());
    let started = Instant::now();
    let template = template.to_string();
    for chunk in (0..copies).collect::<Vec<_>>().chunks(CHUNK) {
        let mut batch = Vec::with_capacity(chunk.len() * events.len());
        for &copy in chunk {
            let id = Uuid::new_v4().to_string();
            for (sequence, event_type, event_version, payload, metadata) in &events {
                let payload = payload.to_string().replace(&template, &id);
                let metadata = earlier(metadata, copy as i64)?;
                batch.push(SerializedEvent::new(
                    id.clone(),
                    *sequence as usize,
                    "run".into(),
                    event_type.clone(),
                    event_version.clone(),
                    serde_json::from_str(&payload)?,
                    metadata,
                ));
            }
        }
        repo.append(&batch).await?;
    }
    server.state.bus.pump().kick();
    while shown().await? < before + copies as i64 {
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(900.max(copies as u64 / 100)),
            "the runs were not projected in time"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let per_second = copies as f64 / started.elapsed().as_secs_f64();
    // The other projections of the runs' events (a submission waits for all of
    // them), then the state a history reaches under autovacuum: without it the
    // total's index-only scan visits every new row's page.
    server.state.bus.pump().drain().await;
    sqlx::query("VACUUM (ANALYZE) runs").execute(pool).await?;
    Ok(per_second)
}

/// The event's metadata with its `time` (which the read models take their times
/// from) `seconds` earlier: each copy ran a second before the one after it.
fn earlier(metadata: &Value, seconds: i64) -> anyhow::Result<Value> {
    let mut metadata = metadata.clone();
    let time = metadata["time"]
        .as_str()
        .context("an event's metadata has no time")?;
    let time = chrono::DateTime::parse_from_rfc3339(time)? - chrono::Duration::seconds(seconds);
    metadata["time"] = Value::String(time.to_rfc3339());
    Ok(metadata)
}

/// Times `samples` requests of `GET /runs?page_size=20`, one after another; sorted.
async fn pages(
    server: &Server,
    client: &reqwest::Client,
    samples: usize,
) -> anyhow::Result<Vec<Duration>> {
    let mut latencies = Vec::with_capacity(samples);
    for _ in 0..samples {
        let sent = Instant::now();
        let response = client
            .get(format!("{}/runs?page_size=20", server.base))
            .bearer_auth(&server.token)
            .send()
            .await?;
        let status = response.status();
        let body: Value = response.json().await?;
        anyhow::ensure!(status.is_success(), "GET /runs answered {status}: {body}");
        anyhow::ensure!(body["total"].as_i64().is_some(), "no total in {body}");
        latencies.push(sent.elapsed());
    }
    latencies.sort();
    Ok(latencies)
}
