//! A seeded, deterministic simulation of the executor queue and the projector
//! (issue 27, item 2). Workers claim, start, finish and lose runs; clients submit
//! and cancel; transactions commit late and out of order; workers crash, their
//! heartbeats go stale and another worker's recovery ends their runs; a sealer
//! gives committed events their log positions and a projector folds them into a
//! read model the workers pick their claims from, lagging behind.
//!
//! Every run transition is decided by the real [`Run`] aggregate; the store is
//! modelled the way postgres-es uses PostgreSQL (an append carries the version it
//! was decided on and fails at commit when the stream moved on), and the sealer
//! and projector as decision 0006 describes them (positions in commit order, a
//! checkpoint per projection). After every step the invariants are checked:
//!
//! - a run is claimed at most once, and held by at most one live worker;
//! - a cancelled run never starts; a run starts at most once;
//! - a terminal run never changes (only its contents may expire);
//! - the sealer gives every committed event exactly one position, in commit order;
//! - the projector applies positions 1..=checkpoint, each once, in order, and
//!   never passes the sealed end; drained, its read model equals the streams.
//!
//! `SIM_SEEDS` (default 2000) seeds run in `cargo test`; `SIM_SEED=<n>` replays one;
//! `scripts/simulate.sh` runs many more. A failure names its seed.

use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use domain::principal::{AuthMethod, PrincipalType};
use domain::runs::run::{
    Run, RunCommand, RunEnded, RunEvent, RunStatus, RunSubmitted, StoredObject, SubmissionSource,
    TerminalClass,
};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// Steps of one schedule.
const STEPS: usize = 400;
/// Ticks after which a worker's heartbeat is stale.
const LEASE: u64 = 8;

/// An append decided on a stream version, not yet committed.
struct Pending {
    run: u32,
    expected: usize,
    events: Vec<RunEvent>,
    /// The worker whose claim or step this is, told the outcome at commit.
    worker: Option<usize>,
}

struct Worker {
    id: String,
    alive: bool,
    heartbeat: u64,
    /// Runs whose claim this worker saw committed.
    holds: BTreeSet<u32>,
}

/// One committed event, by stream and sequence.
type EventRef = (u32, usize);

#[derive(Default)]
struct World {
    streams: BTreeMap<u32, Vec<RunEvent>>,
    pending: Vec<Pending>,
    /// Committed, in commit order, not yet sealed.
    unsealed: Vec<EventRef>,
    /// The log: position `i + 1` is `sealed[i]`.
    sealed: Vec<EventRef>,
    /// The projector's checkpoint and what it applied, in order.
    checkpoint: usize,
    applied: Vec<usize>,
    read_model: BTreeMap<u32, (RunStatus, Option<String>)>,
    workers: Vec<Worker>,
    now: u64,
    next_run: u32,
    next_worker: u32,
    trace: Vec<String>,
}

fn submitted(run: u32) -> Box<RunSubmitted> {
    Box::new(RunSubmitted {
        run_id: Uuid::from_u128(run as u128),
        company_id: Uuid::from_u128(1),
        chatroom_id: Uuid::from_u128(2),
        task_id: Uuid::from_u128(3),
        task_version_id: Uuid::from_u128(4),
        share_grant_id: None,
        principal_type: PrincipalType::User,
        principal_id: Uuid::from_u128(5),
        auth_method: AuthMethod::Jwt,
        api_key_id: None,
        submission_source: SubmissionSource::Rest,
        input_digest: "sha256:00".into(),
        input: StoredObject {
            key: "k".into(),
            byte_size: 2,
            digest: "sha256:00".into(),
        },
        timeout_seconds: 60,
        resource_profile: "standard".into(),
        retry_of_run_id: None,
        request_hash: format!("h{run}"),
        slot_sources: None,
    })
}

/// An event as one short line of the trace.
fn describe(event: &RunEvent) -> String {
    match event {
        RunEvent::RunClaimed { worker_id } => format!("RunClaimed by {worker_id}"),
        RunEvent::RunFinished(ended) => format!(
            "RunFinished {:?} {}",
            ended.terminal_class,
            ended.error_code.as_deref().unwrap_or("")
        ),
        other => other.event_type(),
    }
}

fn fold(events: &[RunEvent]) -> Run {
    let mut run = Run::default();
    for event in events {
        run.apply(event.clone());
    }
    run
}

/// The real aggregate's decision on the stream as committed now.
fn decide(events: &[RunEvent], command: RunCommand) -> Option<Vec<RunEvent>> {
    let mut run = fold(events);
    let sink = EventSink::<Run>::default();
    futures::executor::block_on(async {
        run.handle(command, &(), &sink).await.ok()?;
        Some(sink.collect().await)
    })
}

impl World {
    fn new() -> Self {
        let mut world = Self::default();
        for _ in 0..3 {
            world.spawn_worker();
        }
        world
    }

    fn spawn_worker(&mut self) {
        self.next_worker += 1;
        self.workers.push(Worker {
            id: format!("w{}", self.next_worker),
            alive: true,
            heartbeat: self.now,
            holds: BTreeSet::new(),
        });
    }

    fn propose(&mut self, run: u32, command: RunCommand, worker: Option<usize>) {
        let events = self.streams.get(&run).cloned().unwrap_or_default();
        if let Some(decided) = decide(&events, command).filter(|e| !e.is_empty()) {
            self.pending.push(Pending {
                run,
                expected: events.len(),
                events: decided,
                worker,
            });
        }
    }

    fn commit(&mut self, index: usize, rng: &mut StdRng) {
        let pending = self.pending.swap_remove(index);
        let stream = self.streams.entry(pending.run).or_default();
        // An in-flight transaction of a crashed worker may still commit, or abort.
        let aborted = pending
            .worker
            .is_some_and(|w| !self.workers[w].alive && rng.gen_bool(0.5));
        if stream.len() != pending.expected || aborted {
            self.trace.push(format!("conflict on run {}", pending.run));
            return;
        }
        for event in pending.events {
            if let (RunEvent::RunClaimed { .. }, Some(w)) = (&event, pending.worker) {
                self.workers[w].holds.insert(pending.run);
            }
            self.trace
                .push(format!("commit run {} {}", pending.run, describe(&event)));
            stream.push(event);
            self.unsealed.push((pending.run, stream.len() - 1));
        }
    }

    fn seal(&mut self) {
        self.sealed.append(&mut self.unsealed);
    }

    fn project(&mut self, budget: usize) {
        let end = self.sealed.len().min(self.checkpoint + budget);
        for position in self.checkpoint + 1..=end {
            let (run, sequence) = self.sealed[position - 1];
            let event = self.streams[&run][sequence].clone();
            let entry = self
                .read_model
                .entry(run)
                .or_insert((RunStatus::Queued, None));
            let mut folded = Run {
                submitted: Some(submitted(run)),
                status: entry.0,
                worker_id: entry.1.clone(),
                content_expired: false,
            };
            folded.apply(event);
            *entry = (folded.status, folded.worker_id);
            self.applied.push(position);
        }
        self.checkpoint = end;
    }

    /// A worker's pass: recover runs of stale workers, advance its own, claim.
    fn worker_pass(&mut self, w: usize, rng: &mut StdRng) {
        let stale: BTreeSet<String> = self
            .workers
            .iter()
            .filter(|x| self.now - x.heartbeat > LEASE)
            .map(|x| x.id.clone())
            .collect();
        let active = |s: RunStatus| !s.terminal() && s != RunStatus::Queued;
        let lost: Vec<(u32, RunStatus)> = self
            .read_model
            .iter()
            .filter(|(_, (s, holder))| {
                active(*s) && holder.as_ref().is_some_and(|h| stale.contains(h))
            })
            .map(|(run, (s, _))| (*run, *s))
            .collect();
        for (run, status) in lost {
            let class = match status {
                RunStatus::CancelRequested => TerminalClass::Cancelled,
                _ => TerminalClass::PlatformFailed,
            };
            self.propose(
                run,
                RunCommand::Finish(Box::new(RunEnded::bare(class, "worker_lost"))),
                None,
            );
        }
        let holds: Vec<u32> = self.workers[w].holds.iter().copied().collect();
        for run in holds {
            let status = fold(&self.streams[&run]).status;
            let command = match status {
                RunStatus::Starting => RunCommand::Start,
                RunStatus::Running if rng.gen_bool(0.5) => {
                    RunCommand::Finish(Box::new(RunEnded::bare(TerminalClass::Completed, "done")))
                }
                RunStatus::CancelRequested => RunCommand::Finish(Box::new(RunEnded::bare(
                    TerminalClass::Cancelled,
                    "cancelled",
                ))),
                s if s.terminal() => {
                    self.workers[w].holds.remove(&run);
                    continue;
                }
                _ => continue,
            };
            self.propose(run, command, Some(w));
        }
        let queued: Vec<u32> = self
            .read_model
            .iter()
            .filter(|(_, (s, _))| *s == RunStatus::Queued)
            .map(|(run, _)| *run)
            .take(2)
            .collect();
        let worker_id = self.workers[w].id.clone();
        for run in queued {
            self.propose(
                run,
                RunCommand::Claim {
                    worker_id: worker_id.clone(),
                },
                Some(w),
            );
        }
    }

    fn step(&mut self, rng: &mut StdRng) {
        self.now += 1;
        for worker in self.workers.iter_mut().filter(|w| w.alive) {
            if rng.gen_bool(0.8) {
                worker.heartbeat = self.now;
            }
        }
        match rng.gen_range(0..100) {
            0..=14 => {
                self.next_run += 1;
                let run = self.next_run;
                self.propose(run, RunCommand::Submit(submitted(run)), None);
            }
            15..=21 if self.next_run > 0 => {
                let run = rng.gen_range(1..=self.next_run);
                self.propose(run, RunCommand::Cancel, None);
            }
            22..=46 => {
                let alive: Vec<usize> = (0..self.workers.len())
                    .filter(|&w| self.workers[w].alive)
                    .collect();
                if !alive.is_empty() {
                    let w = alive[rng.gen_range(0..alive.len())];
                    self.worker_pass(w, rng);
                }
            }
            47..=49 => {
                let alive: Vec<usize> = (0..self.workers.len())
                    .filter(|&w| self.workers[w].alive)
                    .collect();
                if alive.len() > 1 {
                    let w = alive[rng.gen_range(0..alive.len())];
                    self.workers[w].alive = false;
                    self.trace.push(format!("crash {}", self.workers[w].id));
                }
            }
            50..=52 => self.spawn_worker(),
            53..=79 if !self.pending.is_empty() => {
                let index = rng.gen_range(0..self.pending.len());
                self.commit(index, rng);
            }
            80..=89 => self.seal(),
            _ => self.project(rng.gen_range(1..=4)),
        }
    }

    fn drain(&mut self, rng: &mut StdRng) {
        while !self.pending.is_empty() {
            self.commit(0, rng);
        }
        self.seal();
        self.project(usize::MAX / 2);
    }

    fn check(&self) -> Result<(), String> {
        for (run, events) in &self.streams {
            let claims = events
                .iter()
                .filter(|e| matches!(e, RunEvent::RunClaimed { .. }))
                .count();
            let starts = events
                .iter()
                .filter(|e| matches!(e, RunEvent::RunStarted))
                .count();
            if claims > 1 || starts > 1 {
                return Err(format!("run {run}: {claims} claims, {starts} starts"));
            }
            let mut cancelled = false;
            let mut ended = false;
            for event in events {
                match event {
                    RunEvent::RunStarted if cancelled || ended => {
                        return Err(format!("run {run} started after a cancel or its end"));
                    }
                    RunEvent::RunContentExpired => {}
                    _ if ended => {
                        return Err(format!("run {run} changed after its end: {event:?}"));
                    }
                    RunEvent::RunCancelRequested => cancelled = true,
                    RunEvent::RunFinished(_) => ended = true,
                    _ => {}
                }
            }
            let holders = self
                .workers
                .iter()
                .filter(|w| w.alive && w.holds.contains(run))
                .count();
            if holders > 1 {
                return Err(format!("run {run} held by {holders} live workers"));
            }
        }
        let mut seen = BTreeSet::new();
        for reference in self.sealed.iter().chain(&self.unsealed) {
            if !seen.insert(*reference) {
                return Err(format!("event {reference:?} sealed twice"));
            }
        }
        let committed: usize = self.streams.values().map(Vec::len).sum();
        if seen.len() != committed {
            return Err(format!("{committed} committed, {} in the log", seen.len()));
        }
        if self.checkpoint > self.sealed.len() {
            return Err("the checkpoint passed the sealed end".into());
        }
        if !self.applied.iter().copied().eq(1..=self.checkpoint) {
            return Err("the projector skipped or repeated a position".into());
        }
        Ok(())
    }

    fn check_drained(&self) -> Result<(), String> {
        for (run, events) in &self.streams {
            let run_state = fold(events);
            let projected = self.read_model.get(run).cloned();
            if projected != Some((run_state.status, run_state.worker_id.clone())) {
                return Err(format!(
                    "run {run}: read model {projected:?}, stream {:?}",
                    run_state.status
                ));
            }
        }
        Ok(())
    }
}

/// What the schedules did, summed: proof that they reach the cases that matter.
#[derive(Debug, Default)]
struct Coverage {
    conflicts: usize,
    crashes: usize,
    claims: usize,
    starts: usize,
    lost: usize,
    cancels_of_started_runs: usize,
}

impl Coverage {
    fn add(&mut self, world: &World) {
        let count = |text: &str| world.trace.iter().filter(|t| t.contains(text)).count();
        self.conflicts += count("conflict");
        self.crashes += count("crash");
        self.claims += count("RunClaimed");
        self.starts += count("RunStarted");
        self.lost += count("worker_lost");
        self.cancels_of_started_runs += count("RunCancelRequested");
    }
}

fn simulate(seed: u64, coverage: &mut Coverage) -> Result<(), String> {
    let mut rng = StdRng::seed_from_u64(seed);
    let mut world = World::new();
    for step in 0..STEPS {
        world.step(&mut rng);
        world
            .check()
            .map_err(|e| format!("step {step}: {e}\nlast steps:\n{}", tail(&world.trace)))?;
    }
    world.drain(&mut rng);
    world.check().and_then(|()| world.check_drained())?;
    coverage.add(&world);
    Ok(())
}

fn tail(trace: &[String]) -> String {
    trace[trace.len().saturating_sub(20)..].join("\n")
}

#[test]
fn the_queue_and_the_projector_keep_their_invariants_under_every_schedule() {
    let mut coverage = Coverage::default();
    if let Some(seed) = std::env::var("SIM_SEED").ok().and_then(|s| s.parse().ok()) {
        simulate(seed, &mut coverage).unwrap_or_else(|e| panic!("seed {seed}: {e}"));
        println!("seed {seed}: {coverage:?}");
        return;
    }
    let seeds: u64 = std::env::var("SIM_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2000);
    let first: u64 = std::env::var("SIM_FIRST_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1);
    for seed in first..first + seeds {
        if let Err(error) = simulate(seed, &mut coverage) {
            panic!("seed {seed} (replay with SIM_SEED={seed}): {error}");
        }
    }
    println!("{seeds} seeds from {first}: every invariant held; {coverage:?}");
    let Coverage {
        conflicts,
        crashes,
        claims,
        starts,
        lost,
        cancels_of_started_runs,
    } = coverage;
    assert!(
        [
            conflicts,
            crashes,
            claims,
            starts,
            lost,
            cancels_of_started_runs
        ]
        .iter()
        .all(|&n| n > 0),
        "the schedules never reached some case: {coverage:?}"
    );
}

#[test]
fn a_schedule_replays_from_its_seed() {
    let run = |seed| {
        let mut rng = StdRng::seed_from_u64(seed);
        let mut world = World::new();
        for _ in 0..STEPS {
            world.step(&mut rng);
        }
        world.trace
    };
    assert_eq!(run(7), run(7));
    assert_ne!(run(7), run(8));
}
