//! The `notifications` projection: `sandbox_event` notifications raised by build
//! results (`build_ready`, `build_failed`, `build_cancelled`), addressed to the
//! environment's owner scope and the company managers, and by runs ([`runs`]:
//! `run_terminal`, `run_content_expired`, to the submitter); and what each user
//! read ([`inbox`]). The notification center reads them through [`query`].

mod inbox;
pub mod query;
mod runs;

use super::{RowSet, Table};
use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::environments::environment::{Environment, EnvironmentEvent};
use domain::environments::version::{EnvironmentVersion, VersionEvent};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sqlx::PgConnection;
use std::collections::HashSet;
use uuid::Uuid;

const NOTIFICATIONS: Table = Table {
    name: "notifications",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("kind", "text"),
        ("recipients", "jsonb"),
        ("payload", "jsonb"),
        ("created_at", "timestamptz"),
        ("position", "bigint"),
    ],
};

const OWNERS: Table = Table {
    name: "notification_environment_owners",
    key: &["environment_id"],
    columns: &[
        ("environment_id", "uuid"),
        ("company_id", "uuid"),
        ("owner_scope", "text"),
        ("owner_id", "uuid"),
        ("name", "text"),
    ],
};

const VERSIONS: Table = Table {
    name: "notification_versions",
    key: &["version_id"],
    columns: &[("version_id", "uuid"), ("environment_id", "uuid")],
};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
struct Id {
    id: Uuid,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
struct EnvironmentKey {
    environment_id: Uuid,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
struct VersionKey {
    version_id: Uuid,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Notification {
    id: Uuid,
    company_id: Option<Uuid>,
    kind: String,
    recipients: Value,
    payload: Value,
    created_at: DateTime<Utc>,
    position: i64,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Owner {
    environment_id: Uuid,
    company_id: Option<Uuid>,
    owner_scope: String,
    owner_id: Option<Uuid>,
    name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct VersionEnvironment {
    version_id: Uuid,
    environment_id: Uuid,
}

/// Projects build results into notifications.
pub struct NotificationsProjection;

/// The kind and payload of a notification a version event raises, if any.
fn raised(event: &VersionEvent) -> Option<(&'static str, Uuid, Value)> {
    match event {
        VersionEvent::BuildCompleted { attempt_id, .. } => {
            Some(("build_ready", *attempt_id, json!({})))
        }
        VersionEvent::BuildFailed {
            attempt_id,
            failure,
            ..
        } => Some((
            "build_failed",
            *attempt_id,
            json!({"error_code": failure.error_code, "error_detail": failure.error_detail}),
        )),
        VersionEvent::BuildCancelled { attempt_id, .. } => {
            Some(("build_cancelled", *attempt_id, json!({})))
        }
        _ => None,
    }
}

/// One event this projection reads, decoded, in log order.
enum Decoded {
    Environment(Uuid, EnvironmentEvent),
    Version(Uuid, VersionEvent, DateTime<Utc>, i64),
}

/// Keeps the owner row (scope and current name) of an environment.
fn apply_environment(
    owners: &mut RowSet<EnvironmentKey, Owner>,
    id: Uuid,
    event: EnvironmentEvent,
) {
    match event {
        EnvironmentEvent::EnvironmentCreated(created) => {
            owners.upsert_with(EnvironmentKey { environment_id: id }, || Owner {
                environment_id: id,
                company_id: created.company_id,
                owner_scope: created.owner_scope.as_str().into(),
                owner_id: created.owner_id,
                name: created.name,
            });
        }
        EnvironmentEvent::EnvironmentUpdated { name, .. } => {
            if let Some(owner) = owners.get_mut(&EnvironmentKey { environment_id: id }) {
                owner.name = name;
            }
        }
        _ => {}
    }
}

/// The notification a version event raises, addressed to its environment's owner.
fn notification(
    versions: &RowSet<VersionKey, VersionEnvironment>,
    owners: &RowSet<EnvironmentKey, Owner>,
    version_id: Uuid,
    event: &VersionEvent,
    at: DateTime<Utc>,
) -> Option<Notification> {
    let (kind, attempt_id, mut payload) = raised(event)?;
    let environment_id = versions.get(&VersionKey { version_id })?.environment_id;
    let owner = owners.get(&EnvironmentKey { environment_id })?;
    let mut recipients = vec![json!({"scope": owner.owner_scope, "id": owner.owner_id})];
    if let Some(company) = owner.company_id {
        recipients.push(json!({"scope": "company_managers", "id": company}));
    }
    payload["environment_id"] = json!(environment_id);
    payload["environment_name"] = json!(owner.name);
    payload["version_id"] = json!(version_id);
    payload["attempt_id"] = json!(attempt_id);
    Some(Notification {
        id: domain::ids::derive("notification", &[kind, &attempt_id.to_string()]),
        company_id: owner.company_id,
        kind: kind.into(),
        recipients: Value::Array(recipients),
        payload,
        created_at: at,
        position: 0,
    })
}

#[async_trait]
impl Projection for NotificationsProjection {
    fn name(&self) -> &'static str {
        "notifications"
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "notifications",
            "notification_environment_owners",
            "notification_versions",
            "notification_runs",
            "notification_reads",
            "notification_read_marks",
        ]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &[
            "environment",
            "environment_version",
            "run",
            "notification_inbox",
        ]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        runs::apply(conn, events).await?;
        inbox::apply(conn, events).await?;
        let mut decoded = Vec::new();
        for event in events {
            let id = || event.aggregate_id.parse::<Uuid>().context("aggregate id");
            if let Some(e) = event.decode::<Environment>()? {
                decoded.push(Decoded::Environment(id()?, e));
            } else if let Some(e) = event.decode::<EnvironmentVersion>()? {
                decoded.push(Decoded::Version(id()?, e, event.time(), event.position));
            }
        }
        let version_keys: Vec<VersionKey> = decoded
            .iter()
            .filter_map(|d| match d {
                Decoded::Version(id, e, ..) if raised(e).is_some() => {
                    Some(VersionKey { version_id: *id })
                }
                _ => None,
            })
            .collect();
        let loaded = VERSIONS
            .load::<_, VersionEnvironment>(conn, &version_keys)
            .await?;
        let mut environment_ids: HashSet<Uuid> = loaded.iter().map(|v| v.environment_id).collect();
        let mut versions = RowSet::loaded(loaded.into_iter().map(|r| {
            (
                VersionKey {
                    version_id: r.version_id,
                },
                r,
            )
        }));
        for d in &decoded {
            match d {
                Decoded::Environment(id, _) => environment_ids.insert(*id),
                Decoded::Version(_, VersionEvent::VersionCreated(created), ..) => {
                    environment_ids.insert(created.environment_id)
                }
                Decoded::Version(..) => false,
            };
        }
        let owner_keys: Vec<EnvironmentKey> = environment_ids
            .iter()
            .map(|id| EnvironmentKey {
                environment_id: *id,
            })
            .collect();
        let mut owners = RowSet::loaded(
            OWNERS
                .load::<_, Owner>(conn, &owner_keys)
                .await?
                .into_iter()
                .map(|r| {
                    (
                        EnvironmentKey {
                            environment_id: r.environment_id,
                        },
                        r,
                    )
                }),
        );
        // In log order: a notification names the environment as it was called when
        // the build ended, whatever batch the events arrive in.
        let mut notifications: RowSet<Id, Notification> = RowSet::default();
        for d in decoded {
            match d {
                Decoded::Environment(id, event) => apply_environment(&mut owners, id, event),
                Decoded::Version(id, VersionEvent::VersionCreated(created), ..) => {
                    let row = VersionEnvironment {
                        version_id: id,
                        environment_id: created.environment_id,
                    };
                    versions.upsert_with(VersionKey { version_id: id }, || row);
                }
                Decoded::Version(id, event, at, position) => {
                    let raised = notification(&versions, &owners, id, &event, at);
                    if let Some(row) = raised.map(|row| Notification { position, ..row }) {
                        notifications.upsert_with(Id { id: row.id }, || row);
                    }
                }
            }
        }
        VERSIONS.store(conn, versions).await?;
        OWNERS.store(conn, owners).await?;
        NOTIFICATIONS.store(conn, notifications).await
    }
}
