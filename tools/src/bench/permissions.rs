//! `sandboxctl bench permissions`: 100 company tables of 10 columns, 100,000
//! records in the first and 100 in each other, and a caller (a company user, not a
//! table manager) whose grant on every table reads through a 3-predicate row policy
//! with 2 hidden columns. Measured over HTTP: (a) the table list page of 50 tables
//! with the caller's `record_count` (one batched count), (b) a filtered search page
//! of 50 in the large table.

use super::report::{Figure, Report};
use super::server::{Server, on_scratch_server};
use super::stats::p50_p95;
use super::tables::{create_table, fill};
use anyhow::Context;
use clap::Args;
use serde_json::{Value, json};

/// Options of `bench permissions`.
#[derive(Debug, Clone, Args)]
pub struct PermissionsArgs {
    /// Tables in the company.
    #[arg(long, default_value_t = 100)]
    pub tables: usize,
    /// Records in the large table.
    #[arg(long, default_value_t = 100_000)]
    pub records: usize,
    /// Records in each other table.
    #[arg(long, default_value_t = 100)]
    pub small: usize,
    /// Requests measured per figure.
    #[arg(long, default_value_t = 300)]
    pub requests: usize,
}

async fn read(request: reqwest::RequestBuilder, token: &str) -> anyhow::Result<Value> {
    let response = request.bearer_auth(token).send().await?;
    let status = response.status();
    let body: Value = response.json().await?;
    anyhow::ensure!(status.is_success(), "answered {status}: {body}");
    Ok(body)
}

async fn measure(server: &Server, args: &PermissionsArgs) -> anyhow::Result<[(f64, f64); 2]> {
    let client = reqwest::Client::new();
    // The caller: a company user who manages nothing, read through its grants.
    let token = &server.reader_token;
    let reader_id = server.reader_id;
    let mut large = None;
    for i in 0..args.tables {
        let (table_id, keys) = create_table(server, &client, &format!("table {i:03}")).await?;
        let records = if i == 0 { args.records } else { args.small };
        fill(server, table_id, &keys, records).await?;
        // name, qty, price, active, due, at, status, notes, tags, owner
        let policy = json!({"and": [
            {"column": keys[6], "op": "in", "value": ["open", "doing"]},
            {"column": keys[1], "op": "gte", "value": 100},
            {"column": keys[3], "op": "eq", "value": true}]});
        let grant = json!({"subject_type": "user", "subject_id": reader_id, "can_read": "filtered",
                           "row_filter": policy, "hidden_columns": [keys[2], keys[7]]});
        server
            .call(
                &client,
                reqwest::Method::POST,
                &format!("/tables/{table_id}/permissions"),
                grant,
            )
            .await?;
        large.get_or_insert((table_id, keys));
    }
    let (large_id, keys) = large.context("no table")?;

    let list_url = format!("{}/tables?limit=50", server.base);
    let list = p50_p95(args.requests, || async {
        let page = read(client.get(&list_url), token).await?;
        let tables = page["tables"].as_array().context("tables")?;
        anyhow::ensure!(tables.len() == 50, "a page of 50 tables");
        anyhow::ensure!(
            tables[0]["record_count"].as_i64() < Some(args.records as i64),
            "narrowed count"
        );
        Ok(())
    })
    .await?;

    let search_url = format!("{}/tables/{large_id}/records/search", server.base);
    let search = json!({"filter": {"column": keys[1], "op": "lt", "value": 900},
                        "sort": [{"column": keys[1], "order": "asc"}], "limit": 50});
    let page = p50_p95(args.requests, || async {
        let page = read(client.post(&search_url).json(&search), token).await?;
        let records = page["records"].as_array().context("records")?;
        anyhow::ensure!(records.len() == 50, "a page of 50 records");
        anyhow::ensure!(records[0]["data"].get("price").is_none(), "price is hidden");
        Ok(())
    })
    .await?;
    Ok([list, page])
}

/// Runs the benchmark on a scratch database next to the target.
pub async fn run(target_url: &str, args: &PermissionsArgs) -> anyhow::Result<Report> {
    let prefix = "/private/module/custom_tables/company";
    let [(list_p50, list_p95), (page_p50, page_p95)] = on_scratch_server(target_url, prefix, {
        let args = args.clone();
        move |s| Box::pin(async move { measure(s, &args).await })
    })
    .await?;
    println!(
        "bench permissions: {} tables, {} records in one, a grant with a 3-predicate row policy and 2 hidden columns",
        args.tables, args.records
    );
    println!(
        "(a) table list page of 50 with the caller's record_count ({} requests): p50 {list_p50:.2} ms, p95 {list_p95:.2} ms (target p95 < 30 ms)",
        args.requests
    );
    println!(
        "(b) filtered, sorted search page of 50 in the large table ({} requests): p50 {page_p50:.2} ms, p95 {page_p95:.2} ms (target p95 < 30 ms)",
        args.requests
    );
    Ok(vec![
        Figure::new(
            "permissions (a) table list with record_count, p95",
            format!("{list_p95:.2} ms"),
            "< 30 ms",
        ),
        Figure::new(
            "permissions (b) search page under a row policy, p95",
            format!("{page_p95:.2} ms"),
            "< 30 ms",
        ),
    ])
}
