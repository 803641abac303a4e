//! `sandboxctl bench tables`: a custom table of 10 mixed columns filled with
//! 100,000 records, then (a) a filtered, sorted page of 50 with its exact total over
//! HTTP (p50, p95), (a') the same page through a saved view of that filter and sort
//! (whose filter the projection indexes), (b) a full CSV export (rows/s), (d) a page
//! of a table as large with computed columns (`computed.rs`) and (c) a type change
//! of one column (rows/s).
//!
//! The table and its columns are created through the HTTP API of an in-process
//! server on a scratch database; the records are appended to the log directly (5,000
//! per statement) and projected by the server's pump, as a replay would.

use super::report::{Figure, Report};
use super::server::{Server, on_scratch_server};
use super::stats::p50_p95;
use anyhow::Context;
use clap::Args;
use cqrs_es::DomainEvent;
use cqrs_es::persist::SerializedEvent;
use domain::tables::record::RecordEvent;
use projections::store::LogRepository;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Options of `bench tables`.
#[derive(Debug, Clone, Args)]
pub struct TablesArgs {
    /// Records in the table.
    #[arg(long, default_value_t = 100_000)]
    pub records: usize,
    /// Page requests measured.
    #[arg(long, default_value_t = 200)]
    pub pages: usize,
}

/// The figures.
struct Figures {
    computed: super::computed::Figures,
    fill_rows_per_second: f64,
    page_p50_ms: f64,
    page_p95_ms: f64,
    view_page_p50_ms: f64,
    view_page_p95_ms: f64,
    csv_rows_per_second: f64,
    type_change_rows_per_second: f64,
}

const COLUMNS: [(&str, &str); 10] = [
    ("name", "string"),
    ("qty", "integer"),
    ("price", "float"),
    ("active", "boolean"),
    ("due", "date"),
    ("at", "datetime"),
    ("status", "select"),
    ("notes", "text"),
    ("tags", "multi_select"),
    ("owner", "user"),
];

const STATUSES: [&str; 4] = ["open", "doing", "done", "dropped"];

/// The cells of record `i`, deterministic.
fn cells(keys: &[String], i: usize, owner: Uuid) -> Value {
    let values = [
        json!(format!("item {i:06}")),
        json!((i * 7919) % 1000),
        json!(((i * 104_729) % 100_000) as f64 / 100.0),
        json!(i.is_multiple_of(3)),
        json!(format!("2026-{:02}-{:02}", 1 + i % 12, 1 + i % 28)),
        json!(format!("2026-01-01T{:02}:{:02}:00Z", i % 24, i % 60)),
        json!(STATUSES[i % 4]),
        json!(format!("notes for record {i} with some words")),
        json!(if i.is_multiple_of(2) {
            vec!["red"]
        } else {
            vec!["red", "blue"]
        }),
        json!(owner.to_string()),
    ];
    keys.iter()
        .cloned()
        .zip(values)
        .collect::<serde_json::Map<_, _>>()
        .into()
}

/// Appends `records` records of the ten [`COLUMNS`] to the log (5,000 per
/// statement) and waits until the server's pump projected them; returns records
/// per second.
pub(super) async fn fill(
    server: &Server,
    table_id: Uuid,
    keys: &[String],
    records: usize,
) -> anyhow::Result<f64> {
    fill_with(server, table_id, records, |i| {
        cells(keys, i, server.user_id)
    })
    .await
}

/// Appends `records` records whose cells `cells(i)` gives, as [`fill`] does.
pub(super) async fn fill_with(
    server: &Server,
    table_id: Uuid,
    records: usize,
    cells: impl Fn(usize) -> Value,
) -> anyhow::Result<f64> {
    let repo = LogRepository::new(server.state.pool.clone());
    let started = Instant::now();
    for chunk in (0..records).collect::<Vec<_>>().chunks(5_000) {
        let events: Vec<SerializedEvent> = chunk
            .iter()
            .map(|&i| {
                let record_id = Uuid::new_v4();
                let event = RecordEvent::RecordCreated {
                    record_id,
                    table_id,
                    company_id: server.company_id,
                    created_by: format!("user:{}", server.user_id),
                    data: serde_json::from_value(cells(i))?,
                };
                Ok(SerializedEvent::new(
                    record_id.to_string(),
                    1,
                    "custom_table_record".into(),
                    event.event_type(),
                    event.event_version(),
                    serde_json::to_value(&event)?,
                    json!({"principal_type": "operator", "principal_id": "bench", "request_id": "bench",
                           "time": chrono::Utc::now().to_rfc3339()}),
                ))
            })
            .collect::<anyhow::Result<_>>()?;
        repo.append(&events).await?;
    }
    server.state.bus.pump().kick();
    loop {
        let count: i64 = sqlx::query_scalar("SELECT record_count FROM custom_tables WHERE id = $1")
            .bind(table_id)
            .fetch_one(&server.state.pool)
            .await?;
        if count as usize >= records {
            break;
        }
        // Generous: a million records take many minutes on a small machine.
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(900.max(records as u64 / 200)),
            "the records were not projected in time"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    Ok(records as f64 / started.elapsed().as_secs_f64())
}

/// Creates a table with the ten [`COLUMNS`] through the API; returns its id and
/// the columns' internal keys.
pub(super) async fn create_table(
    server: &Server,
    client: &reqwest::Client,
    name: &str,
) -> anyhow::Result<(Uuid, Vec<String>)> {
    let post = reqwest::Method::POST;
    let table = server
        .call(client, post.clone(), "/tables", json!({"name": name}))
        .await?;
    let table_id: Uuid = table["id"].as_str().context("table id")?.parse()?;
    let mut keys = Vec::new();
    for (name, column_type) in COLUMNS {
        let mut column = json!({"name": name, "type": column_type});
        match column_type {
            "select" => column["options"] = json!(STATUSES),
            "multi_select" => column["options"] = json!(["red", "blue", "green"]),
            _ => {}
        }
        let created = server
            .call(
                client,
                post.clone(),
                &format!("/tables/{table_id}/columns"),
                column,
            )
            .await?;
        keys.push(
            created["column"]["id"]
                .as_str()
                .context("column key")?
                .to_string(),
        );
    }
    Ok((table_id, keys))
}

/// p50 and p95 of `pages` requests of the search `body`; every answer must hold a
/// full page of 50.
async fn pages(
    server: &Server,
    client: &reqwest::Client,
    path: &str,
    body: &Value,
    pages: usize,
) -> anyhow::Result<(f64, f64)> {
    let url = format!("{path}/records/search");
    p50_p95(pages, || async {
        let page = server
            .call(client, reqwest::Method::POST, &url, body.clone())
            .await?;
        anyhow::ensure!(
            page["records"].as_array().map(Vec::len) == Some(50),
            "a page holds 50 records"
        );
        Ok(())
    })
    .await
}

async fn measure(server: &Server, args: &TablesArgs) -> anyhow::Result<Figures> {
    let client = reqwest::Client::new();
    let post = reqwest::Method::POST;
    let (table_id, keys) = create_table(server, &client, "bench").await?;
    let path = format!("/tables/{table_id}");
    let fill_rows_per_second = fill(server, table_id, &keys, args.records).await?;

    let filter = json!({"and": [{"column": "status", "op": "eq", "value": "open"},
                                {"column": "qty", "op": "gte", "value": 100}]});
    let sort = json!([{"column": "qty", "order": "asc"}]);
    let search = json!({"filter": filter, "sort": sort, "limit": 50});
    let (page_p50_ms, page_p95_ms) = pages(server, &client, &path, &search, args.pages).await?;
    let view = server
        .call(
            &client,
            post.clone(),
            &format!("{path}/views"),
            json!({"name": "open from 100", "filter": filter, "sort": sort}),
        )
        .await?;
    let view_id = view["id"].as_str().context("view id")?;
    let through_view = json!({"view_id": view_id, "limit": 50});
    let (view_page_p50_ms, view_page_p95_ms) =
        pages(server, &client, &path, &through_view, args.pages).await?;
    let computed = super::computed::measure(server, &client, args.records, args.pages).await?;

    let started = Instant::now();
    let response = client
        .post(format!("{}{path}/records/export", server.base))
        .bearer_auth(&server.token)
        .json(&json!({"format": "csv"}))
        .send()
        .await?;
    anyhow::ensure!(
        response.status().is_success(),
        "export answered {}",
        response.status()
    );
    let csv = response.bytes().await?;
    let rows = csv
        .iter()
        .filter(|b| **b == b'\n')
        .count()
        .saturating_sub(1);
    anyhow::ensure!(rows == args.records, "the export holds {rows} rows");
    let csv_rows_per_second = rows as f64 / started.elapsed().as_secs_f64();

    let started = Instant::now();
    let changed = server
        .call(
            &client,
            reqwest::Method::PATCH,
            &format!("{path}/columns/{}", keys[1]),
            json!({"type": "string"}),
        )
        .await?;
    let info = &changed["migration_info"];
    if info["background_migration"] == true {
        let status_path = format!(
            "/migrations/{}/status",
            info["migration_id"].as_str().context("migration id")?
        );
        loop {
            let status = server
                .call(&client, reqwest::Method::GET, &status_path, Value::Null)
                .await?;
            if status["state"] == "completed" {
                break;
            }
            anyhow::ensure!(
                started.elapsed() < Duration::from_secs(600),
                "the migration did not complete"
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
    let type_change_rows_per_second = args.records as f64 / started.elapsed().as_secs_f64();
    Ok(Figures {
        computed,
        fill_rows_per_second,
        page_p50_ms,
        page_p95_ms,
        view_page_p50_ms,
        view_page_p95_ms,
        csv_rows_per_second,
        type_change_rows_per_second,
    })
}

/// Runs the benchmark on a scratch database next to the target.
pub async fn run(target_url: &str, args: &TablesArgs) -> anyhow::Result<Report> {
    let prefix = "/private/module/custom_tables/company";
    let figures = on_scratch_server(target_url, prefix, {
        let args = args.clone();
        move |s| Box::pin(async move { measure(s, &args).await })
    })
    .await?;
    println!("bench tables: {} records of 10 mixed columns", args.records);
    println!(
        "fill (log append + projection): {:.0} records/s",
        figures.fill_rows_per_second
    );
    println!(
        "(a) filtered, sorted page of 50 over HTTP ({} requests): p50 {:.2} ms, p95 {:.2} ms (target p95 < 25 ms)",
        args.pages, figures.page_p50_ms, figures.page_p95_ms
    );
    println!(
        "(a') the same filter and sort as a saved view: p50 {:.2} ms, p95 {:.2} ms",
        figures.view_page_p50_ms, figures.view_page_p95_ms
    );
    println!(
        "(b) full CSV export: {:.0} rows/s",
        figures.csv_rows_per_second
    );
    println!(
        "(d) page of 50 with two rollups (links into {} records), a lookup and two formulas: p50 {:.2} ms, p95 {:.2} ms (target p95 < 40 ms)",
        super::computed::LINKED,
        figures.computed.p50_ms,
        figures.computed.p95_ms
    );
    println!(
        "(c) type change of one column (integer to string): {:.0} rows/s (target >= 20,000)",
        figures.type_change_rows_per_second
    );
    let records = args.records;
    Ok(vec![
        Figure::new(
            format!("tables fill, {records} records"),
            format!("{:.0} records/s", figures.fill_rows_per_second),
            ">= 25,000 records/s",
        ),
        Figure::new(
            format!("tables (a) filtered sorted page with total, {records} records, p95"),
            format!("{:.2} ms", figures.page_p95_ms),
            "<= 15 ms (100,000), <= 60 ms (1,000,000)",
        ),
        Figure::new(
            format!("tables (a') the same page through a saved view, {records} records, p95"),
            format!("{:.2} ms", figures.view_page_p95_ms),
            "<= 15 ms (100,000), <= 60 ms (1,000,000)",
        ),
        Figure::new(
            "tables (b) CSV export",
            format!("{:.0} rows/s", figures.csv_rows_per_second),
            "-",
        ),
        Figure::new(
            "tables (c) column type change",
            format!("{:.0} rows/s", figures.type_change_rows_per_second),
            ">= 20,000 rows/s",
        ),
        Figure::new(
            "tables (d) page with rollups, lookup, formulas, p95",
            format!("{:.2} ms", figures.computed.p95_ms),
            "< 40 ms",
        ),
    ])
}
