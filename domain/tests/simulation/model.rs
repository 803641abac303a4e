//! The model: runs decided by the real `Run` aggregate, a store whose appends
//! commit late and fail on a moved stream, workers with heartbeats, a sealer and a
//! lagging projector, and one random step at a time.

use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use domain::principal::{AuthMethod, PrincipalType};
use domain::runs::run::{
    Run, RunCommand, RunEnded, RunEvent, RunStatus, RunSubmitted, StoredObject, SubmissionSource,
    TerminalClass,
};
use rand::Rng;
use rand::rngs::StdRng;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

/// Steps of one schedule.
pub(crate) const STEPS: usize = 400;
/// Ticks after which a worker's heartbeat is stale.
pub(crate) const LEASE: u64 = 8;

/// An append decided on a stream version, not yet committed.
pub(crate) struct Pending {
    pub(crate) run: u32,
    pub(crate) expected: usize,
    pub(crate) events: Vec<RunEvent>,
    /// The worker whose claim or step this is, told the outcome at commit.
    pub(crate) worker: Option<usize>,
}

pub(crate) struct Worker {
    pub(crate) id: String,
    pub(crate) alive: bool,
    pub(crate) heartbeat: u64,
    /// Runs whose claim this worker saw committed.
    pub(crate) holds: BTreeSet<u32>,
}

/// One committed event, by stream and sequence.
pub(crate) type EventRef = (u32, usize);

#[derive(Default)]
pub(crate) struct World {
    pub(crate) streams: BTreeMap<u32, Vec<RunEvent>>,
    pub(crate) pending: Vec<Pending>,
    /// Committed, in commit order, not yet sealed.
    pub(crate) unsealed: Vec<EventRef>,
    /// The log: position `i + 1` is `sealed[i]`.
    pub(crate) sealed: Vec<EventRef>,
    /// The projector's checkpoint and what it applied, in order.
    pub(crate) checkpoint: usize,
    pub(crate) applied: Vec<usize>,
    pub(crate) read_model: BTreeMap<u32, (RunStatus, Option<String>)>,
    pub(crate) workers: Vec<Worker>,
    pub(crate) now: u64,
    pub(crate) next_run: u32,
    pub(crate) next_worker: u32,
    pub(crate) trace: Vec<String>,
}

pub(crate) fn submitted(run: u32) -> Box<RunSubmitted> {
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
        hold: None,
    })
}

/// An event as one short line of the trace.
pub(crate) fn describe(event: &RunEvent) -> String {
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

pub(crate) fn fold(events: &[RunEvent]) -> Run {
    let mut run = Run::default();
    for event in events {
        run.apply(event.clone());
    }
    run
}

/// The real aggregate's decision on the stream as committed now.
pub(crate) fn decide(events: &[RunEvent], command: RunCommand) -> Option<Vec<RunEvent>> {
    let mut run = fold(events);
    let sink = EventSink::<Run>::default();
    futures::executor::block_on(async {
        run.handle(command, &(), &sink).await.ok()?;
        Some(sink.collect().await)
    })
}

impl World {
    pub(crate) fn new() -> Self {
        let mut world = Self::default();
        for _ in 0..3 {
            world.spawn_worker();
        }
        world
    }

    pub(crate) fn spawn_worker(&mut self) {
        self.next_worker += 1;
        self.workers.push(Worker {
            id: format!("w{}", self.next_worker),
            alive: true,
            heartbeat: self.now,
            holds: BTreeSet::new(),
        });
    }

    pub(crate) fn propose(&mut self, run: u32, command: RunCommand, worker: Option<usize>) {
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

    pub(crate) fn commit(&mut self, index: usize, rng: &mut StdRng) {
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

    pub(crate) fn seal(&mut self) {
        self.sealed.append(&mut self.unsealed);
    }

    pub(crate) fn project(&mut self, budget: usize) {
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
                ..Run::default()
            };
            folded.apply(event);
            *entry = (folded.status, folded.worker_id);
            self.applied.push(position);
        }
        self.checkpoint = end;
    }

    /// A worker's pass: recover runs of stale workers, advance its own, claim.
    pub(crate) fn worker_pass(&mut self, w: usize, rng: &mut StdRng) {
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

    pub(crate) fn step(&mut self, rng: &mut StdRng) {
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

    pub(crate) fn drain(&mut self, rng: &mut StdRng) {
        while !self.pending.is_empty() {
            self.commit(0, rng);
        }
        self.seal();
        self.project(usize::MAX / 2);
    }
}
