//! The `environments` projection: environments, their versions and build attempts,
//! as the list and detail routes and the build worker read them.

pub mod query;
mod rows;

pub use rows::{AttemptRow, EnvironmentRow, VersionRow};

use super::RowSet;
use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::environments::environment::{Environment, EnvironmentEvent, Lifecycle};
use domain::environments::version::{
    BuildStatus, EnvironmentVersion, SecurityState, TerminalClass, VersionEvent, VersionState,
    attempt_status_after, version_state_after,
};
use rows::{ATTEMPTS, ENVIRONMENTS, Id, VERSIONS};
use sqlx::PgConnection;
use std::collections::HashSet;
use std::str::FromStr;
use uuid::Uuid;

/// Projects [`Environment`] and [`EnvironmentVersion`].
pub struct EnvironmentsProjection;

enum Change {
    Environment(Uuid, EnvironmentEvent, DateTime<Utc>),
    Version(Uuid, VersionEvent, DateTime<Utc>),
}

#[derive(Default)]
struct Workset {
    environments: RowSet<Id, EnvironmentRow>,
    versions: RowSet<Id, VersionRow>,
    attempts: RowSet<Id, AttemptRow>,
}

impl Workset {
    async fn load(conn: &mut PgConnection, changes: &[Change]) -> anyhow::Result<Self> {
        let mut created = HashSet::new();
        let (mut environments, mut versions, mut attempts) = (Vec::new(), Vec::new(), Vec::new());
        for change in changes {
            match change {
                Change::Environment(id, EnvironmentEvent::EnvironmentCreated(_), _) => {
                    created.insert(*id);
                }
                Change::Environment(id, _, _) if !created.contains(id) => {
                    environments.push(Id { id: *id })
                }
                Change::Environment(..) => {}
                Change::Version(id, event, _) => {
                    if let VersionEvent::VersionCreated(_) = event {
                        created.insert(*id);
                    } else if !created.contains(id) {
                        versions.push(Id { id: *id });
                    }
                    if let VersionEvent::BuildQueued { attempt_id, .. } = event {
                        created.insert(*attempt_id);
                    } else if let Some((attempt_id, _)) = attempt_status_after(event)
                        && !created.contains(&attempt_id)
                    {
                        attempts.push(Id { id: attempt_id });
                    }
                }
            }
        }
        let environments = ENVIRONMENTS
            .load::<_, EnvironmentRow>(conn, &environments)
            .await?;
        let versions = VERSIONS.load::<_, VersionRow>(conn, &versions).await?;
        let attempts = ATTEMPTS.load::<_, AttemptRow>(conn, &attempts).await?;
        Ok(Self {
            environments: RowSet::loaded(environments.into_iter().map(|r| (Id { id: r.id }, r))),
            versions: RowSet::loaded(versions.into_iter().map(|r| (Id { id: r.id }, r))),
            attempts: RowSet::loaded(attempts.into_iter().map(|r| (Id { id: r.id }, r))),
        })
    }

    fn fold_environment(&mut self, id: Uuid, event: EnvironmentEvent, at: DateTime<Utc>) {
        match event {
            EnvironmentEvent::EnvironmentCreated(c) => {
                self.environments.upsert_with(Id { id }, || EnvironmentRow {
                    id,
                    company_id: c.company_id,
                    owner_kind: c.owner_kind,
                    owner_scope: c.owner_scope,
                    owner_id: c.owner_id,
                    name: c.name,
                    description: c.description,
                    lifecycle: Lifecycle::Active,
                    security_state: SecurityState::Clear,
                    version_count: 0,
                    created_at: at,
                    updated_at: at,
                });
            }
            EnvironmentEvent::EnvironmentUpdated { name, description } => {
                self.environment(id, at, |row| {
                    row.name = name;
                    row.description = description;
                })
            }
            EnvironmentEvent::EnvironmentArchived => {
                self.environment(id, at, |row| row.lifecycle = Lifecycle::Archived)
            }
            EnvironmentEvent::VersionNumberAllocated { version_number, .. } => {
                self.environment(id, at, |row| row.version_count = version_number)
            }
        }
    }

    fn environment(
        &mut self,
        id: Uuid,
        at: DateTime<Utc>,
        change: impl FnOnce(&mut EnvironmentRow),
    ) {
        if let Some(row) = self.environments.get_mut(&Id { id }) {
            change(row);
            row.updated_at = at;
        }
    }

    fn fold_version(&mut self, id: Uuid, event: VersionEvent, at: DateTime<Utc>) {
        if let Some(row) = self.versions.get_mut(&Id { id }) {
            row.state = version_state_after(&event, row.state);
            row.updated_at = at;
        }
        if let Some((attempt_id, status)) = attempt_status_after(&event)
            && let Some(row) = self.attempts.get_mut(&Id { id: attempt_id })
        {
            row.status = status;
            row.updated_at = at;
        }
        match event {
            VersionEvent::VersionCreated(c) => {
                self.versions.upsert_with(Id { id }, || VersionRow {
                    id,
                    environment_id: c.environment_id,
                    company_id: c.company_id,
                    version_number: c.version_number,
                    state: VersionState::Draft,
                    security_state: SecurityState::Clear,
                    resource_profile: c.resource_profile,
                    owned_object_id: c.owned_object_id,
                    source_digest: c.source_digest,
                    source_ref: c.source_ref,
                    image: None,
                    runner_release: c.runner_release,
                    ready_at: None,
                    created_at: at,
                    updated_at: at,
                });
            }
            VersionEvent::BuildQueued {
                attempt_id,
                attempt_number,
                region,
                profile,
                ..
            } => {
                let Some(version) = self
                    .versions
                    .get_mut(&Id { id })
                    .map(|v| (v.environment_id, v.company_id))
                else {
                    return;
                };
                self.attempts
                    .upsert_with(Id { id: attempt_id }, || AttemptRow {
                        id: attempt_id,
                        version_id: id,
                        environment_id: version.0,
                        company_id: version.1,
                        attempt_number,
                        status: BuildStatus::ValidationQueued,
                        terminal_class: None,
                        stage_code: None,
                        error_code: None,
                        error_detail: None,
                        build_region: region,
                        build_profile: profile,
                        report_object_id: None,
                        report_total_bytes: None,
                        retryable_until: None,
                        worker_id: None,
                        queued_at: at,
                        updated_at: at,
                    });
            }
            VersionEvent::BuildClaimed {
                attempt_id,
                worker_id,
                ..
            } => self.attempt(attempt_id, |row| row.worker_id = Some(worker_id)),
            VersionEvent::BuildCompleted {
                attempt_id,
                image,
                report,
                ..
            } => {
                if let Some(row) = self.versions.get_mut(&Id { id }) {
                    row.image = Some(image);
                    row.ready_at = Some(at);
                }
                self.attempt(attempt_id, |row| {
                    row.terminal_class = Some(TerminalClass::Completed);
                    row.report_object_id = report.as_ref().map(|r| r.object_id);
                    row.report_total_bytes = report.map(|r| r.total_bytes);
                });
            }
            VersionEvent::BuildFailed {
                attempt_id,
                failure,
                report,
                retryable_until,
                ..
            } => self.attempt(attempt_id, |row| {
                row.terminal_class = Some(failure.terminal_class);
                row.error_code = Some(failure.error_code);
                row.error_detail = failure.error_detail;
                row.stage_code = failure.stage_code;
                row.report_object_id = report.as_ref().map(|r| r.object_id);
                row.report_total_bytes = report.map(|r| r.total_bytes);
                row.retryable_until = retryable_until;
            }),
            VersionEvent::BuildCancelled {
                attempt_id,
                report,
                retryable_until,
                ..
            } => self.attempt(attempt_id, |row| {
                row.retryable_until = retryable_until;
                row.terminal_class = Some(TerminalClass::Cancelled);
                row.error_code = Some("tenant_cancel".into());
                row.report_object_id = report.as_ref().map(|r| r.object_id);
                row.report_total_bytes = report.map(|r| r.total_bytes);
            }),
            VersionEvent::ImageRemoved { .. } => {
                if let Some(row) = self.versions.get_mut(&Id { id }) {
                    row.image = None;
                }
            }
            VersionEvent::BuildAdvanced { .. }
            | VersionEvent::BuildCancelRequested { .. }
            | VersionEvent::BuildCancelling { .. }
            | VersionEvent::VersionArchived => {}
        }
    }

    fn attempt(&mut self, id: Uuid, change: impl FnOnce(&mut AttemptRow)) {
        if let Some(row) = self.attempts.get_mut(&Id { id }) {
            change(row);
        }
    }

    async fn store(self, conn: &mut PgConnection) -> anyhow::Result<()> {
        ENVIRONMENTS.store(conn, self.environments).await?;
        VERSIONS.store(conn, self.versions).await?;
        ATTEMPTS.store(conn, self.attempts).await
    }
}

#[async_trait]
impl Projection for EnvironmentsProjection {
    fn name(&self) -> &'static str {
        "environments"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["environments", "environment_versions", "build_attempts"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["environment", "environment_version"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut changes = Vec::new();
        for event in events {
            let id = || Uuid::from_str(&event.aggregate_id).context("aggregate id");
            if let Some(e) = event.decode::<Environment>()? {
                changes.push(Change::Environment(id()?, e, event.time()));
            } else if let Some(e) = event.decode::<EnvironmentVersion>()? {
                changes.push(Change::Version(id()?, e, event.time()));
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        let mut workset = Workset::load(conn, &changes).await?;
        for change in changes {
            match change {
                Change::Environment(id, event, at) => workset.fold_environment(id, event, at),
                Change::Version(id, event, at) => workset.fold_version(id, event, at),
            }
        }
        workset.store(conn).await
    }
}
