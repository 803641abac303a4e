//! The `tasks` projection: catalog tasks and their versions, as the `/tasks`
//! routes read them.

pub mod query;
mod rows;

pub use rows::{TaskRow, VersionRow};

use super::RowSet;
use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::environments::environment::Lifecycle;
use domain::tasks::task::{Task, TaskEvent};
use domain::tasks::version::{ContentState, TaskVersion, TaskVersionEvent, TaskVersionState};
use rows::{Id, TASKS, VERSIONS};
use sqlx::PgConnection;
use sqlx::types::Json;
use std::collections::HashSet;
use std::str::FromStr;
use uuid::Uuid;

/// Projects [`Task`] and [`TaskVersion`].
pub struct TasksProjection;

enum Change {
    Task(Uuid, TaskEvent, DateTime<Utc>),
    Version(Uuid, Box<TaskVersionEvent>, DateTime<Utc>),
}

struct Workset {
    tasks: RowSet<Id, TaskRow>,
    versions: RowSet<Id, VersionRow>,
}

impl Workset {
    async fn load(conn: &mut PgConnection, changes: &[Change]) -> anyhow::Result<Self> {
        let mut created = HashSet::new();
        let (mut tasks, mut versions) = (Vec::new(), Vec::new());
        for change in changes {
            match change {
                Change::Task(id, TaskEvent::TaskCreated(_), _) => {
                    created.insert(*id);
                }
                Change::Version(id, event, _)
                    if matches!(**event, TaskVersionEvent::TaskVersionDrafted(_)) =>
                {
                    created.insert(*id);
                }
                Change::Task(id, ..) if !created.contains(id) => tasks.push(Id { id: *id }),
                Change::Version(id, ..) if !created.contains(id) => versions.push(Id { id: *id }),
                _ => {}
            }
        }
        let tasks = TASKS.load::<_, TaskRow>(conn, &tasks).await?;
        let versions = VERSIONS.load::<_, VersionRow>(conn, &versions).await?;
        Ok(Self {
            tasks: RowSet::loaded(tasks.into_iter().map(|r| (Id { id: r.id }, r))),
            versions: RowSet::loaded(versions.into_iter().map(|r| (Id { id: r.id }, r))),
        })
    }

    fn fold_task(&mut self, id: Uuid, event: TaskEvent, at: DateTime<Utc>) {
        match event {
            TaskEvent::TaskCreated(c) => {
                self.tasks.upsert_with(Id { id }, || TaskRow {
                    id,
                    company_id: c.company_id,
                    owner_scope: c.owner_scope,
                    owner_id: c.owner_id,
                    name: c.name,
                    description: c.description,
                    agent_enabled: c.agent_enabled,
                    hidden: c.hidden,
                    lifecycle: Lifecycle::Active,
                    version_count: 0,
                    created_at: at,
                    updated_at: at,
                });
            }
            TaskEvent::TaskUpdated {
                name,
                description,
                agent_enabled,
            } => self.task(id, at, |row| {
                row.name = name;
                row.description = description;
                row.agent_enabled = agent_enabled;
            }),
            TaskEvent::TaskArchived => self.task(id, at, |row| row.lifecycle = Lifecycle::Archived),
            TaskEvent::TaskVersionNumberAllocated { version_number, .. } => {
                self.task(id, at, |row| row.version_count = version_number)
            }
        }
    }

    fn task(&mut self, id: Uuid, at: DateTime<Utc>, change: impl FnOnce(&mut TaskRow)) {
        if let Some(row) = self.tasks.get_mut(&Id { id }) {
            change(row);
            row.updated_at = at;
        }
    }

    fn fold_version(
        &mut self,
        id: Uuid,
        event: TaskVersionEvent,
        at: DateTime<Utc>,
    ) -> anyhow::Result<()> {
        if let TaskVersionEvent::TaskVersionDrafted(d) = event {
            let row = VersionRow {
                id,
                task_id: d.task_id,
                company_id: d.company_id,
                version_number: d.version_number,
                state: TaskVersionState::Draft,
                content_state: ContentState::Active,
                environment_version_id: d.contents.environment_version_id,
                canonical_digest: d.contents.canonical_digest(),
                content_hash: d.contents.content_hash(),
                contents: Json(d.contents),
                published_at: None,
                created_at: at,
                updated_at: at,
            };
            self.versions.upsert_with(Id { id }, || row);
            return Ok(());
        }
        let Some(row) = self.versions.get_mut(&Id { id }) else {
            return Ok(());
        };
        row.updated_at = at;
        match event {
            TaskVersionEvent::TaskVersionDrafted(_) => {}
            TaskVersionEvent::TaskVersionEdited { contents } => {
                row.environment_version_id = contents.environment_version_id;
                row.canonical_digest = contents.canonical_digest();
                row.content_hash = contents.content_hash();
                row.contents = Json(contents);
            }
            TaskVersionEvent::TaskVersionPublished {
                canonical_digest,
                content_hash,
            } => {
                row.state = TaskVersionState::Published;
                row.canonical_digest = canonical_digest;
                row.content_hash = content_hash;
                row.published_at = Some(at);
            }
            TaskVersionEvent::TaskVersionArchived => row.state = TaskVersionState::Archived,
            TaskVersionEvent::TaskVersionScrubbed {
                canonical_digest,
                content_hash,
                ..
            } => {
                row.content_state = ContentState::Scrubbed;
                row.canonical_digest = canonical_digest;
                row.content_hash = content_hash;
                row.contents.0.scrub();
            }
        }
        Ok(())
    }
}

#[async_trait]
impl Projection for TasksProjection {
    fn name(&self) -> &'static str {
        "tasks"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["tasks", "task_versions"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["task", "task_version"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut changes = Vec::new();
        for event in events {
            let id = || Uuid::from_str(&event.aggregate_id).context("aggregate id");
            if let Some(e) = event.decode::<Task>()? {
                changes.push(Change::Task(id()?, e, event.time()));
            } else if let Some(e) = event.decode::<TaskVersion>()? {
                changes.push(Change::Version(id()?, Box::new(e), event.time()));
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        let mut workset = Workset::load(conn, &changes).await?;
        for change in changes {
            match change {
                Change::Task(id, event, at) => workset.fold_task(id, event, at),
                Change::Version(id, event, at) => workset.fold_version(id, *event, at)?,
            }
        }
        TASKS.store(conn, workset.tasks).await?;
        VERSIONS.store(conn, workset.versions).await
    }
}
