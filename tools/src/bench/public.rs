//! `sandboxctl bench public`: the anonymous read surface strangers hit. A table of
//! 100,000 records behind a public read token whose view filters (`status` not
//! `dropped`) and sorts (`qty`), with a four-column allowlist; concurrent clients
//! alternate a page of 50 and a `q` query. Two mixes: (a) strangers reading the
//! first 20 pages and 100 popular searches (answers served from the answer cache
//! once computed), (b) strangers spread wide (offsets up to 5,000, 100,000
//! search terms: nearly every search computed). Prints requests per second in total
//! and the latency percentiles of each.

use super::report::{Figure, Report};
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

/// What the clients ask for: offsets below `offsets`, one of `terms` searches.
#[derive(Debug, Clone, Copy)]
struct Mix {
    offsets: usize,
    terms: usize,
}

/// Request `n` of a mix: even ones read a page, odd ones search; checked.
async fn request(client: &reqwest::Client, read: &str, mix: Mix, n: usize) -> anyhow::Result<()> {
    let response = if n.is_multiple_of(2) {
        let skip = (n / 2 % mix.offsets) / 50 * 50;
        client
            .get(format!("{read}/records?skip={skip}&limit=50"))
            .send()
            .await?
    } else {
        let q = format!("item {:05}", n / 2 % mix.terms);
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
    Ok(())
}

/// One client's loop: random requests of the mix until `until`.
async fn client_loop(
    client: reqwest::Client,
    read: String,
    mix: Mix,
    seed: usize,
    until: Instant,
) -> anyhow::Result<Vec<Duration>> {
    let mut latencies = Vec::new();
    let mut i = seed;
    while Instant::now() < until {
        i = i.wrapping_mul(2_654_435_761).wrapping_add(12_345);
        let sent = Instant::now();
        request(&client, &read, mix, i).await?;
        latencies.push(sent.elapsed());
    }
    Ok(latencies)
}

/// Runs `clients` loops of `mix` for `duration`.
async fn load(
    client: &reqwest::Client,
    read: &str,
    mix: Mix,
    clients: usize,
    duration: Duration,
) -> anyhow::Result<Summary> {
    let started = Instant::now();
    let until = started + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|c| {
            let loop_ = client_loop(client.clone(), read.to_string(), mix, c * 977 + 1, until);
            tokio::spawn(loop_)
        })
        .collect();
    let mut latencies = Vec::new();
    for task in tasks {
        latencies.extend(task.await??);
    }
    Ok(summarize(latencies, started.elapsed()))
}

async fn measure(server: &Server, args: &PublicArgs) -> anyhow::Result<[Summary; 2]> {
    let client = reqwest::Client::new();
    let post = reqwest::Method::POST;
    let (table_id, keys) = create_table(server, &client, "public").await?;
    fill(server, table_id, &keys, args.records).await?;
    // Settle the bulk load (as autovacuum would on a live system) so that its
    // vacuum does not run inside the measurement.
    sqlx::query("VACUUM ANALYZE")
        .execute(&server.state.pool)
        .await?;
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
    let duration: Duration = args.duration.into();
    let popular = Mix {
        offsets: 1_000,
        terms: 100,
    };
    let distinct = Mix {
        offsets: 5_000,
        terms: 100_000,
    };
    // Steady state: each popular answer has been asked for once.
    for n in 0..2 * popular.offsets.max(popular.terms) {
        request(&client, &read, popular, n).await?;
    }
    let a = load(&client, &read, popular, args.clients, duration).await?;
    let b = load(&client, &read, distinct, args.clients, duration).await?;
    Ok([a, b])
}

/// Runs the benchmark on a scratch database next to the target.
pub async fn run(target_url: &str, args: &PublicArgs) -> anyhow::Result<Report> {
    let [a, b] = on_scratch_server(target_url, PREFIX, {
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
        "(a) the first 20 pages and 100 popular searches: {:.0} requests/s in total, p50 {:.2} ms, p99 {:.2} ms (target >= 1,000 requests/s, p99 < 50 ms)",
        a.ops_per_second, a.p50_ms, a.p99_ms
    );
    println!(
        "(b) offsets to 5,000 and 100,000 distinct searches: {:.0} requests/s in total, p50 {:.2} ms, p99 {:.2} ms",
        b.ops_per_second, b.p50_ms, b.p99_ms
    );
    Ok(vec![
        Figure::new(
            "public (a) popular pages and searches",
            format!("{:.0} req/s, p99 {:.2} ms", a.ops_per_second, a.p99_ms),
            ">= 1,000 req/s, p99 < 50 ms",
        ),
        Figure::new(
            "public (b) deep offsets, distinct searches",
            format!("{:.0} req/s, p99 {:.2} ms", b.ops_per_second, b.p99_ms),
            "-",
        ),
    ])
}
