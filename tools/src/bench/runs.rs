//! `sandboxctl bench runs`: (a) the API's submit latency and submit-to-`running`
//! latency (the run is handed to `buildah run`; the container's own start is
//! excluded) at 20 concurrent submitters, p50 and p99; (b) the wall time of our full
//! run of a trivial script against a bare `buildah from` + `buildah run` +
//! `buildah rm` of the same script in the same image, the two in turn; (c) runs completed per minute
//! with the default concurrency; (d) reads over a long run history (`history.rs`).
//!
//! An in-process server with its workers on a scratch database builds a curated
//! busybox image, then everything goes through the HTTP API as a client would.

use super::history::{self, History};
use super::report::{Figure, Report};
use super::server::{Server, with_workers};
use super::stats::percentile;
use super::steps::{self, StepTotals};
use anyhow::Context;
use api::admin::operator_metadata;
use api::runtime::buildah::Buildah;
use clap::Args;
use domain::environments::archive::ArchiveFormat;
use domain::settings::{CompanySettings, SettingsCommand};
use serde_json::{Value, json};
use std::io::Write;
use std::time::{Duration, Instant};

/// Options of `bench runs`.
#[derive(Debug, Clone, Args)]
pub struct RunsArgs {
    /// Concurrent submitters of (a).
    #[arg(long, default_value_t = 20)]
    pub submitters: usize,
    /// Runs of (b), each way.
    #[arg(long, default_value_t = 5)]
    pub repeats: usize,
    /// Runs of (c) (at most the on-prem company queue, 20, are queued at once).
    #[arg(long, default_value_t = 20)]
    pub runs: usize,
    /// Runs of history (d) adds before its reads.
    #[arg(long, default_value_t = 100_000)]
    pub history: usize,
}

const SCRIPT: &str = "echo hi";

fn busybox_context() -> anyhow::Result<Vec<u8>> {
    let busybox = std::fs::read("/bin/busybox").context("busybox-static is installed")?;
    let dockerfile = "FROM scratch\nCOPY busybox /bin/busybox\nRUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n";
    let mut builder = tar::Builder::new(Vec::new());
    for (path, content) in [("Dockerfile", dockerfile.as_bytes()), ("busybox", &busybox)] {
        let mut header = tar::Header::new_gnu();
        header.set_size(content.len() as u64);
        header.set_mode(0o755);
        header.set_cksum();
        builder.append_data(&mut header, path, content)?;
    }
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&builder.into_inner()?)?;
    Ok(gz.finish()?)
}

/// Builds the curated image and publishes a shared task running [`SCRIPT`];
/// returns (version id, image).
pub(super) async fn prepare(
    server: &Server,
    client: &reqwest::Client,
) -> anyhow::Result<(String, String)> {
    let state = &server.state;
    let published = api::admin::curated::publish(
        state,
        "bench",
        "busybox",
        "",
        ArchiveFormat::TarGz,
        busybox_context()?,
    )
    .await?;
    let started = Instant::now();
    let image = loop {
        let (version_state, image): (String, Option<String>) =
            sqlx::query_as("SELECT state, image FROM environment_versions WHERE id = $1")
                .bind(published.version_id)
                .fetch_one(&state.pool)
                .await?;
        match (version_state.as_str(), image) {
            ("ready", Some(image)) => break image,
            ("build_queued" | "building" | "verifying" | "draft", _) => {}
            (other, _) => anyhow::bail!("the image build ended {other}"),
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(300),
            "the build took too long"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    let post = reqwest::Method::POST;
    let task = server
        .call(
            client,
            post.clone(),
            "/tasks",
            json!({"name": "bench", "owner_scope": "company"}),
        )
        .await?;
    let task = task["id"].as_str().context("task id")?.to_string();
    let version = server
        .call(
            client,
            post.clone(),
            &format!("/tasks/{task}/versions"),
            json!({"environment_version_id": published.version_id, "work_script": SCRIPT}),
        )
        .await?;
    let version = version["id"].as_str().context("version id")?.to_string();
    server
        .call(
            client,
            post.clone(),
            &format!("/tasks/{task}/versions/{version}/publish"),
            json!({}),
        )
        .await?;
    server
        .call(
            client,
            post,
            &format!("/tasks/{task}/shares"),
            json!({"target_kind": "company", "target_id": server.company_id}),
        )
        .await?;
    Ok((version, image))
}

pub(super) async fn submit(
    server: &Server,
    client: &reqwest::Client,
    version: &str,
) -> anyhow::Result<(Value, Duration)> {
    let sent = Instant::now();
    let response = client
        .post(format!("{}/chatrooms/{}/runs", server.base, server.room_id))
        .bearer_auth(&server.token)
        .header("idempotency-key", uuid::Uuid::new_v4().to_string())
        .json(&json!({"task_version_id": version, "input": {"n": 1}}))
        .send()
        .await?;
    let status = response.status();
    let body: Value = response.json().await?;
    anyhow::ensure!(status.is_success(), "submission answered {status}: {body}");
    Ok((body, sent.elapsed()))
}

/// Waits until every run has ended; returns when the read models first showed the
/// last one ended: it looks again after each pump cycle (the one that projects a
/// run's end wakes it), so the figure carries no polling interval.
pub(super) async fn until_terminal(server: &Server, ids: &[uuid::Uuid]) -> anyhow::Result<Instant> {
    let started = Instant::now();
    let mut cycles = server.state.bus.pump().cycles();
    loop {
        let open: i64 = sqlx::query_scalar(
            "SELECT count(*) FROM runs WHERE id = ANY($1) AND terminal_at IS NULL",
        )
        .bind(ids)
        .fetch_one(&server.state.pool)
        .await?;
        if open == 0 {
            let failed: i64 = sqlx::query_scalar(
                "SELECT count(*) FROM runs WHERE id = ANY($1) AND status <> 'completed'",
            )
            .bind(ids)
            .fetch_one(&server.state.pool)
            .await?;
            anyhow::ensure!(failed == 0, "{failed} benchmark runs did not complete");
            return Ok(Instant::now());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(900),
            "runs did not end in time"
        );
        tokio::select! {
            changed = cycles.changed() => {
                if changed.is_err() {
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
    }
}

pub(super) fn ids(runs: &[Value]) -> anyhow::Result<Vec<uuid::Uuid>> {
    runs.iter()
        .map(|r| Ok(r["id"].as_str().context("run id")?.parse()?))
        .collect()
}

/// A step's name, its mean and how many runs it covers.
type Steps = Vec<(String, Duration, u64)>;

struct Figures {
    /// (a)'s first burst, on the pool's new connections, no run starting.
    submit_cold: Vec<Duration>,
    /// (a) with no run starting meanwhile (the write path alone).
    submit_alone: Vec<Duration>,
    submit: Vec<Duration>,
    to_running: Vec<Duration>,
    ours: Vec<Duration>,
    /// The executor's steps of (b)'s runs.
    ours_steps: Steps,
    bare: Vec<Duration>,
    /// The bare run's `buildah from`, `run` and `rm`.
    bare_steps: Steps,
    per_minute: f64,
    /// The executor's steps of (c)'s runs.
    burst_steps: Steps,
    history: History,
}

/// Times `step` and adds it to `into` (a bare run's steps, one run each).
async fn timed<T>(
    into: &mut Steps,
    name: &str,
    step: impl Future<Output = anyhow::Result<T>>,
) -> anyhow::Result<T> {
    let started = Instant::now();
    let result = step.await?;
    match into.iter_mut().find(|(step, _, _)| step == name) {
        Some((_, total, count)) => {
            *total += started.elapsed();
            *count += 1;
        }
        None => into.push((name.to_string(), started.elapsed(), 1)),
    }
    Ok(result)
}

async fn measure(server: &Server, args: &RunsArgs) -> anyhow::Result<Figures> {
    let client = reqwest::Client::new();
    let (version, image) = prepare(server, &client).await?;

    // (a) first while no run may start (the company's run concurrency is 0): once
    // on the pool as the setup left it (the burst opens most of its connections, and
    // each new PostgreSQL backend loads its catalog caches on first use), once more
    // on connections that have served a burst; then with the executor starting runs.
    let submit_cold = held_burst(server, &client, &version, args.submitters).await?;
    let submit_alone = held_burst(server, &client, &version, args.submitters).await?;
    let submissions = futures::future::try_join_all(
        (0..args.submitters).map(|_| submit(server, &client, &version)),
    )
    .await?;
    let (runs, mut submit_latency): (Vec<Value>, Vec<Duration>) = submissions.into_iter().unzip();
    let run_ids = ids(&runs)?;
    until_terminal(server, &run_ids).await?;
    let mut to_running: Vec<Duration> = sqlx::query_scalar::<_, f64>(
        "SELECT extract(epoch FROM started_at - queued_at)::float8 FROM runs WHERE id = ANY($1)",
    )
    .bind(&run_ids)
    .fetch_all(&server.state.pool)
    .await?
    .into_iter()
    .map(Duration::from_secs_f64)
    .collect();
    submit_latency.sort();
    to_running.sort();

    // (b) one run at a time, ours and bare in turn, so that the machine's drift
    // over the minutes (buildah's own time varies by half here) weighs on both.
    // The bare runs record no executor steps, so one span of totals covers ours.
    let buildah = Buildah::new(&server.state.builder);
    let before = StepTotals::now();
    let mut ours = Vec::new();
    let mut bare = Vec::new();
    let mut bare_steps = Vec::new();
    for _ in 0..args.repeats {
        let started = Instant::now();
        let (run, _) = submit(server, &client, &version).await?;
        let finished = until_terminal(server, &ids(&[run])?).await?;
        ours.push(finished - started);
        bare.push(bare_run(&buildah, &image, &mut bare_steps).await?);
    }
    let ours_steps = StepTotals::now().since(&before);
    for (_, total, count) in &mut bare_steps {
        *total /= *count as u32;
    }
    ours.sort();
    bare.sort();

    // (c) a burst of runs with the default concurrency.
    let before = StepTotals::now();
    let started = Instant::now();
    let burst =
        futures::future::try_join_all((0..args.runs).map(|_| submit(server, &client, &version)))
            .await?;
    let burst: Vec<Value> = burst.into_iter().map(|(run, _)| run).collect();
    let finished = until_terminal(server, &ids(&burst)?).await?;
    let per_minute = args.runs as f64 * 60.0 / (finished - started).as_secs_f64();
    let burst_steps = StepTotals::now().since(&before);

    // (d) reads over a long run history made of copies of one of (c)'s runs.
    let held = async || held_burst(server, &client, &version, 1).await;
    let history = history::measure(server, &client, ids(&burst)?[0], args.history, held).await?;
    Ok(Figures {
        submit_cold,
        submit_alone,
        submit: submit_latency,
        to_running,
        ours,
        ours_steps,
        bare,
        bare_steps,
        per_minute,
        burst_steps,
        history,
    })
}

/// One bare `buildah from` + `run` + `rm` of the script; its steps go to `steps`.
async fn bare_run(buildah: &Buildah, image: &str, steps: &mut Steps) -> anyhow::Result<Duration> {
    let started = Instant::now();
    let name = format!("bench-bare-{}", uuid::Uuid::new_v4().simple());
    let container = timed(steps, "container", buildah.from_image(image, &name)).await?;
    let mut command = buildah.command();
    command.args([
        "run",
        "--isolation",
        "chroot",
        &container,
        "--",
        "/bin/sh",
        "-c",
        SCRIPT,
    ]);
    let output = timed(steps, "work", async { Ok(command.output().await?) }).await?;
    anyhow::ensure!(output.status.success(), "the bare run failed");
    timed(steps, "container_removal", buildah.remove(&container)).await?;
    Ok(started.elapsed())
}

/// A burst of `submitters` concurrent submissions while no run of the company may
/// start; returns their latencies, sorted, once the runs have ended.
async fn held_burst(
    server: &Server,
    client: &reqwest::Client,
    version: &str,
    submitters: usize,
) -> anyhow::Result<Vec<Duration>> {
    let concurrency = set_run_concurrency(server, 0).await?;
    let held =
        futures::future::try_join_all((0..submitters).map(|_| submit(server, client, version)))
            .await?;
    let (held, mut latencies): (Vec<Value>, Vec<Duration>) = held.into_iter().unzip();
    latencies.sort();
    set_run_concurrency(server, concurrency).await?;
    until_terminal(server, &ids(&held)?).await?;
    Ok(latencies)
}

/// Sets the bench company's run concurrency (0: no run of it starts); returns
/// the one it replaced.
async fn set_run_concurrency(server: &Server, limit: i64) -> anyhow::Result<i64> {
    let company = server.company_id.to_string();
    let bus = &server.state.bus;
    let mut limits = bus.load::<CompanySettings>(&company).await?.limits;
    let replaced = std::mem::replace(&mut limits.run_concurrency_limit, limit);
    let command = SettingsCommand::SetOperatorLimits {
        company_id: server.company_id,
        limits,
    };
    bus.execute::<CompanySettings>(&company, command, &operator_metadata("bench"))
        .await?;
    Ok(replaced)
}

/// Runs the benchmark on a scratch database next to the target.
pub async fn run(target_url: &str, args: &RunsArgs) -> anyhow::Result<Report> {
    let result = with_workers(target_url, async |server, _| measure(server, args).await).await;
    let f = result?;
    let ms = |d: &[Duration], p: f64| percentile(d, p);
    let ours = ms(&f.ours, 0.5);
    let bare = ms(&f.bare, 0.5);
    println!(
        "bench runs: a trivial script (`{SCRIPT}`) in a busybox image, {} run slots",
        4
    );
    println!(
        "(a) {} concurrent submitters, the first burst (new pool connections), no run starting: HTTP submission p50 {:.1} ms, p99 {:.1} ms",
        args.submitters,
        ms(&f.submit_cold, 0.5),
        ms(&f.submit_cold, 0.99)
    );
    println!(
        "(a) {} concurrent submitters while no run starts: HTTP submission p50 {:.1} ms, p99 {:.1} ms",
        args.submitters,
        ms(&f.submit_alone, 0.5),
        ms(&f.submit_alone, 0.99)
    );
    println!(
        "(a) {} concurrent submitters: HTTP submission p50 {:.1} ms, p99 {:.1} ms; submission to `running` (queue wait and container preparation, before `buildah run`) p50 {:.1} ms, p99 {:.1} ms",
        args.submitters,
        ms(&f.submit, 0.5),
        ms(&f.submit, 0.99),
        ms(&f.to_running, 0.5),
        ms(&f.to_running, 0.99)
    );
    println!(
        "(b) full run, submission to terminal (median of {}): {:.0} ms; bare buildah from + run + rm: {:.0} ms; ratio {:.2} (target <= 1.10)",
        args.repeats,
        ours,
        bare,
        ours / bare
    );
    steps::print("(b) our run's steps on the worker", &f.ours_steps);
    steps::print("(b) the bare run's steps", &f.bare_steps);
    println!(
        "(c) {} runs submitted at once: {:.1} runs completed per minute",
        args.runs, f.per_minute
    );
    steps::print("(c) the burst's steps on the worker", &f.burst_steps);
    let submitters = args.submitters;
    let mut figures = Vec::new();
    figures.extend(median_and_p99(
        format!("runs (a) HTTP submission, {submitters} submitters, first burst, no run starting"),
        &f.submit_cold,
        ["-", "-"],
    ));
    figures.extend(median_and_p99(
        format!("runs (a) HTTP submission, {submitters} submitters, no run starting"),
        &f.submit_alone,
        ["-", "-"],
    ));
    figures.extend(median_and_p99(
        format!("runs (a) HTTP submission, {submitters} submitters"),
        &f.submit,
        ["<= 15 ms", "<= 50 ms"],
    ));
    figures.extend([
        Figure::new(
            "runs (b) full trivial run / bare buildah",
            format!("{:.2}x", ours / bare),
            "<= 1.10x",
        ),
        Figure::new(
            "runs (c) trivial runs completed per minute",
            format!("{:.0}", f.per_minute),
            ">= 600",
        ),
    ]);
    figures.extend(f.history.report());
    Ok(figures)
}

/// The p50 and p99 rows of a latency, with their targets.
fn median_and_p99(name: String, sorted: &[Duration], targets: [&str; 2]) -> [Figure; 2] {
    let [p50, p99] = targets;
    [
        Figure::new(
            format!("{name}, p50"),
            format!("{:.1} ms", percentile(sorted, 0.5)),
            p50,
        ),
        Figure::new(
            format!("{name}, p99"),
            format!("{:.1} ms", percentile(sorted, 0.99)),
            p99,
        ),
    ]
}
