//! The command path: load, decide, append, then wait for the read models.
//!
//! cqrs-es's `CqrsFramework` is not used: it cannot retry on a conflict, does not
//! return the new state, and runs its queries inline (their failures are dropped).
//! Here a command loads the aggregate (from our snapshot when there is one), lets it
//! decide, wraps and serializes the events as cqrs-es's event-store mode does, appends
//! them in one statement, retries once on a concurrent write, and finally waits until
//! the projector has applied the new events, so a read right after the command sees
//! them. Right after the append the command takes the pump's ticket, which lets the
//! wait use the pump's in-memory progress instead of querying. When the wait times
//! out the command has still committed: it answers [`CommandError::NotYetVisible`],
//! never a state that lacks its own write.

use super::repository::{LogRepository, NulInText};
use super::snapshot::{load_context, maybe_snapshot};
use crate::pump::{NotYetVisible, Pump, Ticket};
use cqrs_es::event_sink::EventSink;
use cqrs_es::persist::{EventStoreAggregateContext, PersistenceError, SerializedEvent};
use cqrs_es::{Aggregate, AggregateError, EventEnvelope};
use domain::AggregateExt;
use domain::principal::EventMetadata;
use std::sync::Arc;
use tokio_util::sync::CancellationToken;

/// The key of one stored event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventKey {
    /// Aggregate type.
    pub aggregate_type: String,
    /// Aggregate id.
    pub aggregate_id: String,
    /// Sequence inside the aggregate.
    pub sequence: i64,
}

/// The outcome of a command.
#[derive(Debug)]
pub struct Committed<A: Aggregate> {
    /// The aggregate's state after the command.
    pub state: A,
    /// The events the command appended (empty when it changed nothing).
    pub events: Vec<A::Event>,
    /// The key of the aggregate's last event: the one appended last, or, when the
    /// command appended nothing, the newest event its decision was based on.
    pub last: Option<EventKey>,
    /// The pump's ticket taken right after the append committed (none when nothing
    /// was appended).
    pub ticket: Option<Ticket>,
}

/// Why a command did not commit.
#[derive(Debug, thiserror::Error)]
pub enum CommandError<E: std::error::Error> {
    /// The aggregate refused the command.
    #[error("{0}")]
    Rejected(E),
    /// Another writer changed the aggregate twice while this command was deciding.
    #[error("the resource was modified concurrently; retry the request")]
    Conflict,
    /// The store failed.
    #[error("event store failure: {0}")]
    Store(anyhow::Error),
    /// An event would carry a text the read models cannot store (see
    /// [`NulInText`]); nothing was appended.
    #[error("{0}")]
    Unstorable(NulInText),
    /// The command committed, but the read models did not reach its events in time:
    /// the write is durable, a read right now may not show it yet.
    #[error("{0}")]
    NotYetVisible(NotYetVisible),
}

impl<E: std::error::Error> CommandError<E> {
    /// Whether the command's events are in the log (only not yet in the read models).
    pub fn committed(&self) -> bool {
        matches!(self, Self::NotYetVisible(_))
    }
}

/// Executes commands against aggregates stored in the log.
#[derive(Clone)]
pub struct CommandBus {
    repo: LogRepository,
    pump: Arc<Pump>,
}

impl CommandBus {
    /// A bus writing through `repo` and waiting on `pump`.
    pub fn new(repo: LogRepository, pump: Arc<Pump>) -> Self {
        Self { repo, pump }
    }

    /// The projector this bus waits on.
    pub fn pump(&self) -> &Arc<Pump> {
        &self.pump
    }

    /// The repository it appends through.
    pub(super) fn repo(&self) -> &LogRepository {
        &self.repo
    }

    /// Executes a command and waits until every read model reflects it: its own
    /// events, or, when it changed nothing, the state it decided on (another
    /// request's concurrent change must not be invisible right after this one).
    pub async fn execute<A>(
        &self,
        aggregate_id: &str,
        command: A::Command,
        metadata: &EventMetadata,
    ) -> Result<Committed<A>, CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
        A::Command: Clone,
    {
        let committed = self.append::<A>(aggregate_id, command, metadata).await?;
        self.wait(&committed)
            .await
            .map_err(CommandError::NotYetVisible)?;
        Ok(committed)
    }

    /// Waits until every read model reflects an appended command (see
    /// [`Self::execute`]); for a caller that appends under a lock and waits after
    /// releasing it.
    pub async fn wait<A: Aggregate>(&self, committed: &Committed<A>) -> Result<(), NotYetVisible> {
        match &committed.last {
            Some(key) => self.pump.wait_for(key, committed.ticket).await,
            None => Ok(()),
        }
    }

    /// Executes a command for background work: like [`Self::execute`], but a command
    /// whose events the read models have not reached in time is still a success
    /// (it committed; workers move on from the log, not from their own reads).
    pub async fn record<A>(
        &self,
        aggregate_id: &str,
        command: A::Command,
        metadata: &EventMetadata,
    ) -> Result<(), CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
        A::Command: Clone,
    {
        match self.execute::<A>(aggregate_id, command, metadata).await {
            Err(error) if !error.committed() => Err(error),
            _ => Ok(()),
        }
    }

    /// Executes a command for background work whose effect a check serialized by a
    /// lock reads back from the read models (a claim counted against a concurrency
    /// limit): the caller holds its lock until they reflect the command, past the
    /// usual timeout if the projector lags, so the next holder counts it; waiting
    /// ends early only when `stop` fires.
    pub async fn record_until_visible<A>(
        &self,
        aggregate_id: &str,
        command: A::Command,
        metadata: &EventMetadata,
        stop: &CancellationToken,
    ) -> Result<(), CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
        A::Command: Clone,
    {
        let committed = self.append::<A>(aggregate_id, command, metadata).await?;
        while self.wait(&committed).await.is_err() && !stop.is_cancelled() {}
        Ok(())
    }

    /// Executes a command without waiting for the read models (bulk operator work
    /// that waits once at the end).
    pub async fn append<A>(
        &self,
        aggregate_id: &str,
        command: A::Command,
        metadata: &EventMetadata,
    ) -> Result<Committed<A>, CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
        A::Command: Clone,
    {
        match self
            .try_once::<A>(aggregate_id, command.clone(), metadata)
            .await
        {
            Err(CommandError::Conflict) => {
                self.try_once::<A>(aggregate_id, command, metadata).await
            }
            other => other,
        }
    }

    /// The current state of an aggregate, once every read model reflects it: what a
    /// request that found another request's work done (and wrote nothing itself)
    /// reads before it answers from the read models.
    pub async fn settle<A>(&self, aggregate_id: &str) -> Result<A, CommandError<A::Error>>
    where
        A: AggregateExt,
    {
        let context = load_context::<A>(&self.repo, aggregate_id)
            .await
            .map_err(map_error)?;
        if context.current_sequence > 0 {
            let key = EventKey {
                aggregate_type: A::TYPE.to_string(),
                aggregate_id: aggregate_id.to_string(),
                sequence: context.current_sequence as i64,
            };
            self.pump
                .wait_for(&key, None)
                .await
                .map_err(CommandError::NotYetVisible)?;
        }
        Ok(context.aggregate)
    }

    /// The current state of an aggregate, read from the log.
    pub async fn load<A>(&self, aggregate_id: &str) -> Result<A, CommandError<A::Error>>
    where
        A: AggregateExt,
    {
        let context = load_context::<A>(&self.repo, aggregate_id)
            .await
            .map_err(map_error)?;
        Ok(context.aggregate)
    }

    async fn try_once<A>(
        &self,
        aggregate_id: &str,
        command: A::Command,
        metadata: &EventMetadata,
    ) -> Result<Committed<A>, CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
    {
        let decided = self.decide::<A>(aggregate_id, command, metadata).await?;
        if decided.serialized.is_empty() {
            return Ok(decided.unchanged());
        }
        self.repo
            .append(&decided.serialized)
            .await
            .map_err(|e| map_error(e.into()))?;
        let ticket = self.pump.appended().await;
        Ok(decided.appended(&self.repo, ticket).await)
    }

    /// Appends commands on several aggregates of one type that the caller found to
    /// have no events yet, each with its own metadata, in one statement (one
    /// transaction, one commit): the events of every command that was decided, or
    /// none. Each command is decided on an empty aggregate without reading the log.
    /// The outer error is the append's (`Conflict` when one of the aggregates had
    /// events after all, another writer got there first, or two commands name the
    /// same one: nothing was appended); the inner results are each command's
    /// decision (a rejected command appends nothing and the others go on). Nothing
    /// waits for the read models.
    pub async fn append_new_together<A>(
        &self,
        commands: Vec<(String, A::Command, EventMetadata)>,
    ) -> Result<Vec<Result<Committed<A>, CommandError<A::Error>>>, CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
    {
        let mut decisions = Vec::with_capacity(commands.len());
        for (aggregate_id, command, metadata) in commands {
            let empty = EventStoreAggregateContext {
                aggregate_id: aggregate_id.clone(),
                aggregate: A::default(),
                current_sequence: 0,
                current_snapshot: None,
            };
            decisions.push(Self::decide_on(empty, command, &metadata).await);
        }
        let serialized: Vec<SerializedEvent> = decisions
            .iter()
            .flatten()
            .flat_map(|decided| decided.serialized.iter().cloned())
            .collect();
        let ticket = if serialized.is_empty() {
            None
        } else {
            self.repo
                .append(&serialized)
                .await
                .map_err(|e| map_error(e.into()))?;
            Some(self.pump.appended().await)
        };
        let mut outcomes = Vec::with_capacity(decisions.len());
        for decision in decisions {
            outcomes.push(match (decision, ticket) {
                (Ok(decided), Some(ticket)) if !decided.serialized.is_empty() => {
                    Ok(decided.appended(&self.repo, ticket).await)
                }
                (Ok(decided), _) => Ok(decided.unchanged()),
                (Err(error), _) => Err(error),
            });
        }
        Ok(outcomes)
    }

    /// Loads an aggregate and lets it decide a command: its events, serialized with
    /// their sequences and `metadata`, not appended yet.
    async fn decide<A>(
        &self,
        aggregate_id: &str,
        command: A::Command,
        metadata: &EventMetadata,
    ) -> Result<Decided<A>, CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
    {
        let context = load_context::<A>(&self.repo, aggregate_id)
            .await
            .map_err(map_error)?;
        Self::decide_on(context, command, metadata).await
    }

    /// Lets the aggregate as loaded (or known empty) decide a command.
    async fn decide_on<A>(
        mut context: EventStoreAggregateContext<A>,
        command: A::Command,
        metadata: &EventMetadata,
    ) -> Result<Decided<A>, CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
    {
        let aggregate_id = context.aggregate_id.clone();
        let before = context.current_sequence;
        let sink = EventSink::<A>::default();
        context
            .aggregate
            .handle(command, &(), &sink)
            .await
            .map_err(CommandError::Rejected)?;
        let events = sink.collect().await;
        let metadata = metadata.to_map();
        let serialized = events
            .iter()
            .enumerate()
            .map(|(i, payload)| {
                let envelope = EventEnvelope::<A> {
                    aggregate_id: aggregate_id.to_string(),
                    sequence: before + i + 1,
                    payload: payload.clone(),
                    metadata: metadata.clone(),
                };
                SerializedEvent::try_from(&envelope)
            })
            .collect::<Result<Vec<_>, PersistenceError>>()
            .map_err(|e| map_error(e.into()))?;
        Ok(Decided {
            aggregate_id: aggregate_id.to_string(),
            before,
            state: context.aggregate,
            events,
            serialized,
        })
    }
}

/// A command decided on its aggregate, its events not appended yet.
struct Decided<A: Aggregate> {
    aggregate_id: String,
    before: usize,
    state: A,
    events: Vec<A::Event>,
    serialized: Vec<SerializedEvent>,
}

impl<A: AggregateExt> Decided<A> {
    fn key(&self, sequence: usize) -> EventKey {
        EventKey {
            aggregate_type: A::TYPE.to_string(),
            aggregate_id: self.aggregate_id.clone(),
            sequence: sequence as i64,
        }
    }

    /// The outcome of a command that changed nothing.
    fn unchanged(self) -> Committed<A> {
        Committed {
            last: (self.before > 0).then(|| self.key(self.before)),
            state: self.state,
            events: self.events,
            ticket: None,
        }
    }

    /// The outcome once its events were appended (and the pump's `ticket` taken).
    async fn appended(self, repo: &LogRepository, ticket: Ticket) -> Committed<A> {
        let after = self.before + self.events.len();
        maybe_snapshot(repo, &self.aggregate_id, self.before, after, &self.state).await;
        Committed {
            last: Some(self.key(after)),
            state: self.state,
            events: self.events,
            ticket: Some(ticket),
        }
    }
}

fn map_error<E: std::error::Error>(err: AggregateError<E>) -> CommandError<E> {
    match err {
        AggregateError::UserError(e) => CommandError::Rejected(e),
        AggregateError::AggregateConflict => CommandError::Conflict,
        AggregateError::UnexpectedError(e) => unexpected(e),
        AggregateError::DatabaseConnectionError(e) | AggregateError::DeserializationError(e) => {
            CommandError::Store(anyhow::anyhow!(e))
        }
    }
}

/// An unexpected store error: [`CommandError::Unstorable`] for a refused text,
/// otherwise a store failure.
pub(super) fn unexpected<E: std::error::Error>(
    error: Box<dyn std::error::Error + Send + Sync>,
) -> CommandError<E> {
    if error.is::<NulInText>() {
        CommandError::Unstorable(NulInText)
    } else {
        CommandError::Store(anyhow::anyhow!(error))
    }
}
