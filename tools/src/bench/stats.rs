//! Latency percentiles.

use std::time::{Duration, Instant};

/// Throughput and latency of a run.
#[derive(Debug, Clone, Copy)]
pub struct Summary {
    /// Completed operations per second.
    pub ops_per_second: f64,
    /// Median latency.
    pub p50_ms: f64,
    /// 99th percentile latency.
    pub p99_ms: f64,
}

/// Summarizes latencies collected over `elapsed`.
pub fn summarize(mut latencies: Vec<Duration>, elapsed: Duration) -> Summary {
    latencies.sort();
    let at = |q: f64| {
        if latencies.is_empty() {
            return 0.0;
        }
        let index = ((latencies.len() as f64 - 1.0) * q).round() as usize;
        latencies[index].as_secs_f64() * 1000.0
    };
    Summary {
        ops_per_second: latencies.len() as f64 / elapsed.as_secs_f64(),
        p50_ms: at(0.50),
        p99_ms: at(0.99),
    }
}

/// The `q` quantile (0..1) of sorted latencies, in milliseconds.
pub fn percentile(sorted: &[Duration], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let index = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

/// p50 and p95, in milliseconds, of `requests` calls of `call` after ten unmeasured
/// warm-up calls; every call must succeed (it checks its own answer).
pub async fn p50_p95<F, Fut>(requests: usize, mut call: F) -> anyhow::Result<(f64, f64)>
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = anyhow::Result<()>>,
{
    let mut latencies = Vec::with_capacity(requests);
    for i in 0..requests + 10 {
        let sent = Instant::now();
        call().await?;
        if i >= 10 {
            latencies.push(sent.elapsed());
        }
    }
    latencies.sort();
    Ok((percentile(&latencies, 0.50), percentile(&latencies, 0.95)))
}
