//! Requests each on a new connection: what accepting a connection costs the server
//! (its accept loop, the router's set-up per connection), as clients that do not
//! keep connections open see it.

use super::server::Server;
use super::stats::{Summary, summarize};
use std::time::Instant;

/// Sends `count` requests to `/healthz` one after another, each on a new connection.
pub async fn fresh(server: &Server, count: usize) -> anyhow::Result<Summary> {
    // No idle connection is kept, so every request connects anew.
    let client = reqwest::Client::builder()
        .pool_max_idle_per_host(0)
        .build()?;
    let url = format!("{}/healthz", server.base);
    let begin = Instant::now();
    let mut latencies = Vec::with_capacity(count);
    for _ in 0..count {
        let sent = Instant::now();
        let response = client.get(&url).send().await?;
        anyhow::ensure!(
            response.status().is_success(),
            "GET /healthz answered {}",
            response.status()
        );
        response.bytes().await?;
        latencies.push(sent.elapsed());
    }
    Ok(summarize(latencies, begin.elapsed()))
}
