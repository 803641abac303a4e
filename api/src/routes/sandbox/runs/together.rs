//! Run admissions of one company decided together: a submission joins its
//! company's waiting list, then takes the company's admission lock (on-prem, the
//! fleet's first); whoever holds it decides every submission waiting by then,
//! in the order they arrived, against one read of the limits, the queue counts
//! and the budget (each admitted run counted before the next is decided, each hold
//! reserved before the next budget check), and appends all the admitted runs in
//! one statement: one commit under the lock instead of one per run. A
//! submission another holder already decided finds its answer waiting and
//! releases the lock at once.
//!
//! A replay (the run exists) or a second submission of the same run in one batch
//! is appended alone after the batch; so is every run of a batch whose shared
//! append failed (nothing of it was appended). Nothing waits for the read models
//! under the lock.

use super::admission::{ONPREM_COMPANY_QUEUE, ONPREM_FLEET_QUEUE, QUEUE_RETRY_AFTER_SECONDS};
use super::budget;
use crate::admission;
use crate::error::{ApiError, ApiResult};
use crate::limits::company_limits;
use crate::request::Caller;
use crate::state::Inner;
use axum::http::{HeaderValue, header};
use domain::catalog::ResourceProfile;
use domain::error::Code;
use domain::principal::EventMetadata;
use domain::runs::run::{Run, RunCommand, RunSubmitted};
use projections::Committed;
use projections::read_models::pricing::query as prices;
use projections::read_models::runs::query::{self as runs, QueueCounts};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{LazyLock, Mutex};
use tokio::sync::oneshot;
use uuid::Uuid;

/// A run to admit: its submission (without its budget hold yet) and what the
/// limits need to know of it.
pub struct Candidate {
    /// The submission.
    pub submitted: RunSubmitted,
    /// Its resource profile (the hold's rate).
    pub profile: ResourceProfile,
    /// Whether the queued-run limit counts it (every submission but a Quick Run).
    pub counted: bool,
    /// Whether the on-prem queues apply.
    pub onprem: bool,
}

/// A candidate waiting for a holder of the lock to decide it.
struct Waiting {
    number: u64,
    caller: Caller,
    candidate: Candidate,
    answer: oneshot::Sender<ApiResult<Committed<Run>>>,
}

/// Whose waiting list: the service state's (one process may hold several, as
/// tests and benchmarks do, each with its own database) and the company's.
type ListKey = (usize, Uuid);

/// The waiting lists of this process.
static WAITING: LazyLock<Mutex<HashMap<ListKey, Vec<Waiting>>>> = LazyLock::new(Default::default);
/// Numbers the candidates, so a task that could not take the locks can take its
/// own candidate back.
static NUMBER: AtomicU64 = AtomicU64::new(0);

fn waiting() -> std::sync::MutexGuard<'static, HashMap<ListKey, Vec<Waiting>>> {
    WAITING
        .lock()
        .expect("the admission lists are not poisoned")
}

/// The waiting list a caller's submission joins.
fn list_key(caller: &Caller) -> ListKey {
    let state: &Inner = &caller.state;
    (
        std::ptr::from_ref(state) as usize,
        caller.principal.company_id,
    )
}

/// Admits a run (or replays it) together with the company's other waiting
/// submissions; the run is appended, not yet projected, when this returns. The
/// locks are taken and the batch decided by a task shutdown waits for, so a
/// request that goes away mid-way never leaves the others of its batch
/// undecided (its own run is then admitted all the same: a retry with the same
/// `Idempotency-Key` answers it).
pub async fn admit(caller: &Caller, candidate: Candidate) -> ApiResult<Committed<Run>> {
    let company = caller.principal.company_id;
    let list = list_key(caller);
    let onprem = candidate.onprem;
    let number = NUMBER.fetch_add(1, Ordering::Relaxed);
    let (answer, answered) = oneshot::channel();
    waiting().entry(list).or_default().push(Waiting {
        number,
        caller: caller.clone(),
        candidate,
        answer,
    });
    let pool = caller.pool().clone();
    caller.state.runtime.spawn(async move {
        // A holder that took the list before this task's turn decided this run
        // too: the task then leaves without taking the locks.
        let undecided = || {
            waiting()
                .get(&list)
                .is_some_and(|others| others.iter().any(|w| w.number == number))
        };
        let locked = async {
            let fleet = if onprem {
                match admission::lock_while(&pool, Uuid::nil(), "run-queue", undecided).await? {
                    Some(fleet) => Some(fleet),
                    None => return Ok(None),
                }
            } else {
                None
            };
            let own = admission::lock_while(&pool, company, "run-queue", undecided).await?;
            Ok::<_, sqlx::Error>(own.map(|own| (fleet, own)))
        }
        .await;
        let _locks = match locked {
            Ok(Some(locks)) => locks,
            Ok(None) => return,
            Err(error) => {
                // Nobody decides it now: answer it unless a holder already took it.
                let mine = waiting().get_mut(&list).and_then(|others| {
                    let at = others.iter().position(|w| w.number == number)?;
                    Some(others.remove(at))
                });
                if let Some(mine) = mine {
                    let _ = mine.answer.send(Err(error.into()));
                }
                return;
            }
        };
        let batch = waiting().remove(&list).unwrap_or_default();
        if !batch.is_empty() {
            decide(company, batch).await;
        }
    });
    answered
        .await
        .map_err(|_| ApiError::internal(anyhow::anyhow!("a run admission was dropped")))?
}

/// Decides and appends a batch (under the company's lock), answering each.
async fn decide(company: Uuid, batch: Vec<Waiting>) {
    let pool = batch[0].caller.pool().clone();
    let read = async {
        let limits = company_limits(&pool, company).await?;
        let counts = runs::queue_counts(&pool, company).await?;
        let budget = prices::budget(&pool, company).await?;
        Ok::<_, ApiError>((limits.queued_run_limit, counts, budget))
    }
    .await;
    let (limit, mut counts, company_budget) = match read {
        Ok(read) => read,
        Err(error) => {
            let message = format!("the limits of a run admission could not be read: {error:?}");
            refuse_all(batch, &message);
            return;
        }
    };
    let ids: Vec<Uuid> = batch.iter().map(|w| w.candidate.submitted.run_id).collect();
    let mut seen = match runs::existing(&pool, &ids).await {
        Ok(existing) => existing,
        Err(error) => {
            let message = format!("the runs of a run admission could not be read: {error}");
            refuse_all(batch, &message);
            return;
        }
    };
    let mut admitted: Vec<(Waiting, RunSubmitted)> = Vec::new();
    let mut alone: Vec<Waiting> = Vec::new();
    let mut reserved = 0;
    for waiting in batch {
        // A replay, or the second submission of a run in this batch.
        if !seen.insert(waiting.candidate.submitted.run_id) {
            alone.push(waiting);
            continue;
        }
        let decided = async {
            let candidate = &waiting.candidate;
            refuse_over_limits(&counts, limit, candidate.counted, candidate.onprem)?;
            let mut submitted = candidate.submitted.clone();
            submitted.hold = budget::hold(
                &waiting.caller,
                company_budget.as_ref(),
                candidate.profile,
                submitted.timeout_seconds,
                reserved,
            )
            .await?;
            Ok::<_, ApiError>(submitted)
        }
        .await;
        match decided {
            Ok(submitted) => {
                counts.company += 1;
                counts.fleet += 1;
                counts.counted += i64::from(waiting.candidate.counted);
                reserved += submitted.hold.as_ref().map_or(0, |h| h.amount_micros);
                admitted.push((waiting, submitted));
            }
            Err(refused) => {
                let _ = waiting.answer.send(Err(refused));
            }
        }
    }
    append_admitted(admitted, &mut alone).await;
    for waiting in alone {
        let command = RunCommand::Submit(Box::new(waiting.candidate.submitted.clone()));
        let run_id = waiting.candidate.submitted.run_id;
        let result = waiting.caller.append::<Run>(run_id, command).await;
        let _ = waiting.answer.send(result);
    }
}

/// Answers every submission of a batch that could not be decided.
fn refuse_all(batch: Vec<Waiting>, message: &str) {
    for waiting in batch {
        let error = ApiError::internal(anyhow::anyhow!(message.to_string()));
        let _ = waiting.answer.send(Err(error));
    }
}

/// Appends the admitted runs in one statement and answers them; when that
/// statement fails, they are appended alone (with `alone`) instead.
async fn append_admitted(admitted: Vec<(Waiting, RunSubmitted)>, alone: &mut Vec<Waiting>) {
    let Some((first, _)) = admitted.first() else {
        return;
    };
    let bus = first.caller.state.bus.clone();
    let commands: Vec<(String, RunCommand, EventMetadata)> = admitted
        .iter()
        .map(|(waiting, submitted)| {
            (
                submitted.run_id.to_string(),
                RunCommand::Submit(Box::new(submitted.clone())),
                waiting.caller.metadata(),
            )
        })
        .collect();
    // Every admitted run was found absent (`runs::existing`), so none is loaded
    // from the log; one that exists after all makes the append conflict and the
    // batch go alone below.
    match bus.append_new_together::<Run>(commands).await {
        Ok(outcomes) => {
            for ((waiting, _), outcome) in admitted.into_iter().zip(outcomes) {
                let _ = waiting.answer.send(outcome.map_err(ApiError::from));
            }
        }
        Err(error) => {
            tracing::info!(%error, "runs admitted together could not be appended together; appending each alone");
            for (mut waiting, submitted) in admitted {
                waiting.candidate.submitted = submitted;
                alone.push(waiting);
            }
        }
    }
}

/// The company's queued-run limit (`counted`: every submission but a Quick Run)
/// and, on-prem, the company and fleet executor queues (`queued` and `starting`,
/// Quick Run included).
fn refuse_over_limits(
    counts: &QueueCounts,
    limit: i64,
    counted: bool,
    onprem: bool,
) -> ApiResult<()> {
    if counted && counts.counted >= limit {
        return Err(ApiError::code(
            Code::SandboxQueuedRunLimit,
            "the company has as many queued runs as its policy allows",
        )
        .with("limit", limit));
    }
    if onprem {
        let company_cap = ONPREM_COMPANY_QUEUE.min(limit);
        if counts.company >= company_cap {
            return Err(queue_full(company_cap));
        }
        if counts.fleet >= ONPREM_FLEET_QUEUE {
            return Err(queue_full(ONPREM_FLEET_QUEUE));
        }
    }
    Ok(())
}

fn queue_full(limit: i64) -> ApiError {
    ApiError::code(Code::QueueFull, "the run queue is full; try again later")
        .with("limit", limit)
        .with("retry_after_seconds", QUEUE_RETRY_AFTER_SECONDS)
        .with_header(
            header::RETRY_AFTER,
            HeaderValue::from(QUEUE_RETRY_AFTER_SECONDS),
        )
}
