//! `sandboxctl bench public`: the anonymous read surface strangers hit. A table of
//! 100,000 records behind a public read token whose view filters (`status` not
//! `dropped`) and sorts (`qty`), with a four-column allowlist; concurrent clients
//! alternate a page of 50 at a random offset and a `q` query. Prints requests per
//! second in total and the latency percentiles.

use super::server::{Server, on_scratch_server};
use super::stats::{Summary, summarize};
use super::tables::{create_table, fill};
use anyhow::Context;
use clap::Args;
use serde_json::json;
use std::time::{Duration, Instant};

/// Options of `bench public`.
#[derive(Debug, Clone, Args)]
pub struct PublicArgs {
    /// Records in the table.
    #[arg(long, default_value_t = 100_000)]
    pub records: usize,
    /// Concurrent clients.
    #[arg(long, default_value_t = 16)]
    pub clients: usize,
    /// How long the measurement runs.
    #[arg(long, default_value = "10s")]
    pub duration: humantime::Duration,
}

const PREFIX: &str = "/private/module/custom_tables/company";

/// One client's loop: pages and queries until `until`, each answer checked.
async fn client_loop(
    client: reqwest::Client,
    read: String,
    seed: usize,
    until: Instant,
) -> anyhow::Result<Vec<Duration>> {
    let mut latencies = Vec::new();
    let mut i = seed;
    while Instant::now() < until {
        i = i.wrapping_mul(2_654_435_761).wrapping_add(12_345);
        let sent = Instant::now();
        let response = if i.is_multiple_of(2) {
            let skip = i % 70_000;
            client
                .get(format!("{read}/records?skip={skip}&limit=50"))
                .send()
                .await?
        } else {
            let q = format!("item {:04}", i % 10_000);
            client
                .post(format!("{read}/query"))
                .json(&json!({"q": q, "limit": 50}))
                .send()
                .await?
        };
        let status = response.status();
        let body: serde_json::Value = response.json().await?;
        anyhow::ensure!(status.is_success(), "answered {status}: {body}");
        anyhow::ensure!(body["records"].is_array(), "a page");
        latencies.push(sent.elapsed());
    }
    Ok(latencies)
}

async fn measure(server: &Server, args: &PublicArgs) -> anyhow::Result<Summary> {
    let client = reqwest::Client::new();
    let post = reqwest::Method::POST;
    let (table_id, keys) = create_table(server, &client, "public").await?;
    fill(server, table_id, &keys, args.records).await?;
    // name, qty, price, active, due, at, status, notes, tags, owner
    let view = server
        .call(
            &client,
            post.clone(),
            &format!("/tables/{table_id}/views"),
            json!({"name": "open data",
                   "filter": {"column": keys[6], "op": "neq", "value": "dropped"},
                   "sort": [{"column": keys[1], "order": "asc"}]}),
        )
        .await?;
    let minted = server
        .call(
            &client,
            post,
            &format!("/tables/{table_id}/public-read-tokens"),
            json!({"view_id": view["id"], "secretless": true, "allow_query": true,
                   "rpm": 100_000, "visible_columns": [keys[0], keys[1], keys[6], keys[7]]}),
        )
        .await?;
    let token = minted["token_id"].as_str().context("token id")?;
    let root = server.base.strip_suffix(PREFIX).context("base")?;
    let read = format!("{root}/public/module/custom_tables/read/{token}");
    // Warm-up.
    client_loop(
        client.clone(),
        read.clone(),
        7,
        Instant::now() + Duration::from_secs(1),
    )
    .await?;
    let duration: Duration = args.duration.into();
    let started = Instant::now();
    let until = started + duration;
    let tasks: Vec<_> = (0..args.clients)
        .map(|c| {
            tokio::spawn(client_loop(
                client.clone(),
                read.clone(),
                c * 977 + 1,
                until,
            ))
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    Ok(summarize(latencies, started.elapsed()))
}

/// Runs the benchmark on a scratch database next to the target.
pub async fn run(target_url: &str, args: &PublicArgs) -> anyhow::Result<()> {
    let summary = on_scratch_server(target_url, PREFIX, {
        let args = args.clone();
        move |s| Box::pin(async move { measure(s, &args).await })
    })
    .await?;
    println!(
        "bench public: {} records, a view filter and sort, a 4-column allowlist, {} clients alternating pages of 50 and q queries for {}",
        args.records,
        args.clients,
        humantime::format_duration(args.duration.into())
    );
    println!(
        "{:.0} requests/s in total, p50 {:.2} ms, p99 {:.2} ms (target >= 1,000 requests/s, p99 < 50 ms)",
        summary.ops_per_second, summary.p50_ms, summary.p99_ms
    );
    Ok(())
}
