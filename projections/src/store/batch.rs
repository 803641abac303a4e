//! Commands over several aggregates appended as one transaction: all of them or none.
//!
//! A declarative deployment changes many tables at once and must never stop midway.
//! Each aggregate is loaded into a [`Working`] copy, commands are decided and applied
//! in memory, and [`CommandBus::commit`] appends every event of every copy with one
//! statement. A concurrent write to any of the aggregates makes the statement fail
//! on its sequence (nothing is appended) and the caller answers a conflict.

use super::bus::{CommandBus, CommandError, EventKey, unexpected};
use super::snapshot::load_context;
use cqrs_es::event_sink::EventSink;
use cqrs_es::persist::{PersistenceError, SerializedEvent};
use cqrs_es::{Aggregate, AggregateError, EventEnvelope};
use domain::AggregateExt;
use domain::principal::EventMetadata;

/// An aggregate loaded for a batch: its state with the batch's commands applied.
pub struct Working<A: Aggregate> {
    id: String,
    state: A,
    before: usize,
    events: Vec<A::Event>,
}

impl<A: AggregateExt<Services = ()>> Working<A> {
    /// A new aggregate that has no event yet (its id freshly chosen).
    pub fn fresh(id: impl ToString) -> Self {
        Self {
            id: id.to_string(),
            state: A::default(),
            before: 0,
            events: Vec::new(),
        }
    }

    /// The state after the commands handled so far.
    pub fn state(&self) -> &A {
        &self.state
    }

    /// The aggregate id.
    pub fn id(&self) -> &str {
        &self.id
    }

    /// The events the batch holds for it so far.
    pub fn events(&self) -> &[A::Event] {
        &self.events
    }

    /// Decides a command on the current state and applies its events.
    pub async fn handle(&mut self, command: A::Command) -> Result<Vec<A::Event>, A::Error> {
        let sink = EventSink::<A>::default();
        self.state.handle(command, &(), &sink).await?;
        let events = sink.collect().await;
        for event in &events {
            self.state.apply(event.clone());
        }
        self.events.extend(events.iter().cloned());
        Ok(events)
    }

    /// A point to rewind to: its state and the events held so far.
    pub fn mark(&self) -> Mark<A> {
        Mark {
            state: self.state.clone(),
            events: self.events.len(),
        }
    }

    /// Forgets what was decided after `mark`.
    pub fn rewind(&mut self, mark: Mark<A>) {
        self.state = mark.state;
        self.events.truncate(mark.events);
    }

    /// Adds its events to a batch.
    pub fn stage(&self, batch: &mut Batch) -> Result<(), PersistenceError> {
        if self.events.is_empty() {
            return Ok(());
        }
        for (i, payload) in self.events.iter().enumerate() {
            let envelope = EventEnvelope::<A> {
                aggregate_id: self.id.clone(),
                sequence: self.before + i + 1,
                payload: payload.clone(),
                metadata: batch.metadata.clone(),
            };
            batch.events.push(SerializedEvent::try_from(&envelope)?);
        }
        batch.last.push(EventKey {
            aggregate_type: A::TYPE.to_string(),
            aggregate_id: self.id.clone(),
            sequence: (self.before + self.events.len()) as i64,
        });
        Ok(())
    }
}

/// A point of a [`Working`] copy to rewind to (a step of several commands that
/// must succeed together or not at all).
pub struct Mark<A> {
    state: A,
    events: usize,
}

/// The events of several aggregates, appended together by [`CommandBus::commit`].
pub struct Batch {
    metadata: std::collections::HashMap<String, String>,
    events: Vec<SerializedEvent>,
    last: Vec<EventKey>,
}

impl Batch {
    /// An empty batch whose events carry `metadata`.
    pub fn new(metadata: &EventMetadata) -> Self {
        Self {
            metadata: metadata.to_map(),
            events: Vec::new(),
            last: Vec::new(),
        }
    }

    /// Whether it holds no event.
    pub fn is_empty(&self) -> bool {
        self.events.is_empty()
    }

    /// How many events it holds.
    pub fn len(&self) -> usize {
        self.events.len()
    }
}

impl CommandBus {
    /// Loads an aggregate for a batch.
    pub async fn open<A>(&self, aggregate_id: &str) -> Result<Working<A>, CommandError<A::Error>>
    where
        A: AggregateExt<Services = ()>,
    {
        let context = load_context::<A>(self.repo(), aggregate_id)
            .await
            .map_err(|e| match e {
                AggregateError::UserError(e) => CommandError::Rejected(e),
                other => CommandError::Store(anyhow::anyhow!(other.to_string())),
            })?;
        Ok(Working {
            id: aggregate_id.to_string(),
            before: context.current_sequence,
            state: context.aggregate,
            events: Vec::new(),
        })
    }

    /// Appends a batch in one statement, then waits until every read model reflects
    /// it. [`CommandError::Conflict`] when another writer changed one of its
    /// aggregates since it was opened (nothing was appended).
    pub async fn commit(&self, batch: Batch) -> Result<(), CommandError<std::convert::Infallible>> {
        if batch.events.is_empty() {
            return Ok(());
        }
        match self.repo().append(&batch.events).await {
            Ok(()) => {}
            Err(PersistenceError::OptimisticLockError) => return Err(CommandError::Conflict),
            Err(PersistenceError::UnknownError(e)) => return Err(unexpected(e)),
            Err(e) => return Err(CommandError::Store(anyhow::anyhow!(e.to_string()))),
        }
        let ticket = self.pump().appended().await;
        for key in &batch.last {
            self.pump()
                .wait_for(key, Some(ticket))
                .await
                .map_err(CommandError::NotYetVisible)?;
        }
        Ok(())
    }
}
