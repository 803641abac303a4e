//! `sandboxctl bench menu`: the room menu of a room with 500 enabled tasks among
//! 20,000 tasks of the company, read page by page over HTTP (p50, p95; target p95
//! under 10 ms).
//!
//! The tasks, their company-wide grants and the room's bindings are appended to the
//! log directly (as a replay would) and projected by the in-process server's pump;
//! the menu is then read through the real route.

use super::report::{Figure, Report};
use super::server::{Server, on_scratch_server};
use super::stats::percentile;
use clap::Args;
use cqrs_es::DomainEvent;
use cqrs_es::persist::SerializedEvent;
use domain::environments::environment::OwnerScope;
use domain::sharing::binding::{BindingEvent, Pin, SlotAssignment, binding_aggregate_id};
use domain::sharing::generation_id;
use domain::sharing::policy::SlotPolicy;
use domain::sharing::share::{ShareEvent, ShareGranted, ShareTargetKind, share_id};
use domain::tasks::task::{TaskCreated, TaskEvent};
use projections::store::LogRepository;
use serde_json::{Value, json};
use std::time::{Duration, Instant};
use uuid::Uuid;

/// Options of `bench menu`.
#[derive(Debug, Clone, Args)]
pub struct MenuArgs {
    /// Tasks in the company.
    #[arg(long, default_value_t = 20_000)]
    pub tasks: usize,
    /// Tasks enabled in the room.
    #[arg(long, default_value_t = 500)]
    pub enabled: usize,
    /// Page requests measured.
    #[arg(long, default_value_t = 1_000)]
    pub pages: usize,
}

fn stored<E: DomainEvent + serde::Serialize>(
    aggregate_type: &str,
    id: Uuid,
    sequence: usize,
    event: &E,
) -> anyhow::Result<SerializedEvent> {
    Ok(SerializedEvent::new(
        id.to_string(),
        sequence,
        aggregate_type.into(),
        event.event_type(),
        event.event_version(),
        serde_json::to_value(event)?,
        json!({"principal_type": "operator", "principal_id": "bench", "request_id": "bench",
               "time": chrono::Utc::now().to_rfc3339()}),
    ))
}

/// The events of task `i`: its creation and, for the enabled ones, a company grant
/// and the room's binding.
fn task_events(server: &Server, i: usize, enabled: bool) -> anyhow::Result<Vec<SerializedEvent>> {
    let company_id = server.company_id;
    let task_id = Uuid::new_v4();
    let mut events = vec![stored(
        "task",
        task_id,
        1,
        &TaskEvent::TaskCreated(TaskCreated {
            task_id,
            company_id,
            owner_scope: OwnerScope::Company,
            owner_id: company_id,
            name: format!("task {i:05}"),
            description: String::new(),
            agent_enabled: false,
            hidden: false,
        }),
    )?];
    if !enabled {
        return Ok(events);
    }
    let share = share_id(task_id, ShareTargetKind::Company, company_id);
    let grant_id = generation_id("share_grant", share, 1);
    events.push(stored(
        "share",
        share,
        1,
        &ShareEvent::ShareGranted(ShareGranted {
            grant_id,
            generation: 1,
            task_id,
            company_id,
            target_kind: ShareTargetKind::Company,
            target_id: company_id,
            secret_slot_policies: [("API_TOKEN".to_string(), SlotPolicy::Owner)].into(),
        }),
    )?);
    let binding = binding_aggregate_id(server.room_id, task_id);
    events.push(stored(
        "binding",
        binding,
        1,
        &BindingEvent::BindingEnabled {
            binding_id: generation_id("binding", binding, 1),
            generation: 1,
            chatroom_id: server.room_id,
            task_id,
            company_id,
            pin: Pin {
                task_version_id: Uuid::new_v4(),
                version_number: 1,
                task_version_digest: format!("sha256:{}", "ab".repeat(32)),
                input_schema: Some(
                    json!({"type": "object", "properties": {"n": {"type": "integer"}}}),
                ),
                secret_slots: vec![SlotAssignment {
                    name: "API_TOKEN".into(),
                    policy: SlotPolicy::Owner,
                }],
                share_grant_id: grant_id,
            },
        },
    )?);
    Ok(events)
}

async fn fill(server: &Server, args: &MenuArgs) -> anyhow::Result<()> {
    let repo = LogRepository::new(server.state.pool.clone());
    let every = (args.tasks / args.enabled.max(1)).max(1);
    let mut batch = Vec::new();
    for i in 0..args.tasks {
        batch.extend(task_events(
            server,
            i,
            i % every == 0 && i / every < args.enabled,
        )?);
        if batch.len() >= 5_000 {
            repo.append(&std::mem::take(&mut batch)).await?;
        }
    }
    repo.append(&batch).await?;
    server.state.bus.pump().kick();
    let started = Instant::now();
    loop {
        let (tasks, bindings): (i64, i64) = sqlx::query_as(
            "SELECT (SELECT count(*) FROM sharing_tasks), (SELECT count(*) FROM bindings WHERE state = 'enabled')",
        )
        .fetch_one(&server.state.pool)
        .await?;
        if tasks as usize >= args.tasks && bindings as usize >= args.enabled {
            return Ok(());
        }
        anyhow::ensure!(
            started.elapsed() < Duration::from_secs(900),
            "the log was not projected in time"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Reads the menu page by page, starting over after the last page.
async fn measure(server: &Server, args: &MenuArgs) -> anyhow::Result<Vec<Duration>> {
    let client = reqwest::Client::new();
    let path = format!("/chatrooms/{}/menu", server.room_id);
    let mut latencies = Vec::with_capacity(args.pages);
    let (mut token, mut seen) = (None::<String>, 0usize);
    for i in 0..args.pages + 20 {
        let query = token
            .as_ref()
            .map(|t| format!("?page_token={t}"))
            .unwrap_or_default();
        let sent = Instant::now();
        let page: Value = server
            .call(
                &client,
                reqwest::Method::GET,
                &format!("{path}{query}"),
                Value::Null,
            )
            .await?;
        if i >= 20 {
            latencies.push(sent.elapsed());
        }
        seen += page["items"].as_array().map_or(0, Vec::len);
        token = page["next_page_token"].as_str().map(str::to_string);
        if token.is_none() {
            anyhow::ensure!(seen == args.enabled, "the menu listed {seen} tasks");
            seen = 0;
        }
    }
    latencies.sort();
    Ok(latencies)
}

/// Runs the benchmark on a scratch database next to the target.
pub async fn run(target_url: &str, args: &MenuArgs) -> anyhow::Result<Report> {
    let args_owned = args.clone();
    let latencies = on_scratch_server(target_url, "/private/module/sandbox", move |server| {
        Box::pin(async move {
            fill(server, &args_owned).await?;
            measure(server, &args_owned).await
        })
    })
    .await?;
    println!(
        "bench menu: a room with {} enabled tasks among {} tasks of the company",
        args.enabled, args.tasks
    );
    println!(
        "menu page of 50 over HTTP ({} requests, walking every page): p50 {:.2} ms, p95 {:.2} ms (target p95 < 10 ms)",
        latencies.len(),
        percentile(&latencies, 0.50),
        percentile(&latencies, 0.95)
    );
    Ok(vec![Figure::new(
        format!("menu page of 50, {} tasks, p95", args.tasks),
        format!("{:.2} ms", percentile(&latencies, 0.95)),
        "< 10 ms",
    )])
}
