//! The `notifications` projection: `sandbox_event` notifications raised by build
//! results (`build_ready`, `build_failed`, `build_cancelled`) and image cleanup
//! (`image_storage_cleanup_completed`), addressed to the environment's owner scope
//! and the company managers; by a curated environment's new ready version
//! (`curated_environment_published`, to the companies pinning it, [`pins`]); by
//! runs ([`runs`]: `run_terminal`, `run_content_expiring`, `run_content_expired`,
//! to the submitter); who each is addressed to, one row per recipient
//! ([`recipients`]); and what each user read ([`inbox`]). The notification center
//! reads them through [`query`].

mod inbox;
mod pins;
pub mod query;
mod recipients;
mod runs;

use super::{RowSet, Table};
use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::environments::environment::{Environment, EnvironmentEvent};
use domain::environments::version::{EnvironmentVersion, VersionEvent};
use domain::tasks::version::{TaskVersion, TaskVersionEvent};
use pins::Pins;
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

/// The kind, the id it is raised once for, and the payload of a notification a
/// version event raises, if any.
fn raised(version_id: Uuid, event: &VersionEvent) -> Option<(&'static str, Uuid, Value)> {
    match event {
        VersionEvent::BuildCompleted { attempt_id, .. } => Some((
            "build_ready",
            *attempt_id,
            json!({"attempt_id": attempt_id}),
        )),
        VersionEvent::BuildFailed {
            attempt_id,
            failure,
            ..
        } => Some((
            "build_failed",
            *attempt_id,
            json!({"attempt_id": attempt_id, "error_code": failure.error_code,
                   "error_detail": failure.error_detail}),
        )),
        VersionEvent::BuildCancelled { attempt_id, .. } => Some((
            "build_cancelled",
            *attempt_id,
            json!({"attempt_id": attempt_id}),
        )),
        VersionEvent::ImageRemoved { .. } => {
            Some(("image_storage_cleanup_completed", version_id, json!({})))
        }
        _ => None,
    }
}

/// One event this projection reads, decoded, in log order.
enum Decoded {
    Environment(Uuid, EnvironmentEvent),
    Version(Uuid, VersionEvent, DateTime<Utc>, i64),
    TaskVersion(Uuid, Box<TaskVersionEvent>),
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

/// The notifications a version event raises: to its environment's owner scope and
/// company managers; a curated environment's new ready version also to every
/// company pinning the environment.
fn notifications_of(
    versions: &RowSet<VersionKey, VersionEnvironment>,
    owners: &RowSet<EnvironmentKey, Owner>,
    pins: &Pins,
    version_id: Uuid,
    event: &VersionEvent,
    at: DateTime<Utc>,
) -> Vec<Notification> {
    let Some((kind, key, mut payload)) = raised(version_id, event) else {
        return Vec::new();
    };
    let Some(environment_id) = versions
        .get(&VersionKey { version_id })
        .map(|v| v.environment_id)
    else {
        return Vec::new();
    };
    let Some(owner) = owners.get(&EnvironmentKey { environment_id }) else {
        return Vec::new();
    };
    payload["environment_id"] = json!(environment_id);
    payload["environment_name"] = json!(owner.name);
    payload["version_id"] = json!(version_id);
    let mut recipients = vec![json!({"scope": owner.owner_scope, "id": owner.owner_id})];
    if let Some(company) = owner.company_id {
        recipients.push(json!({"scope": "company_managers", "id": company}));
    }
    let mut raised = vec![Notification {
        id: domain::ids::derive("notification", &[kind, &key.to_string()]),
        company_id: owner.company_id,
        kind: kind.into(),
        recipients: Value::Array(recipients),
        payload: payload.clone(),
        created_at: at,
        position: 0,
    }];
    if kind == "build_ready" && owner.company_id.is_none() {
        let kind = "curated_environment_published";
        for company in pins.companies(environment_id) {
            raised.push(Notification {
                id: domain::ids::derive(
                    "notification",
                    &[kind, &key.to_string(), &company.to_string()],
                ),
                company_id: Some(company),
                kind: kind.into(),
                recipients: json!([{"scope": "company", "id": company}]),
                payload: payload.clone(),
                created_at: at,
                position: 0,
            });
        }
    }
    raised
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
            "notification_task_pins",
            "notification_reads",
            "notification_read_marks",
            "notification_recipients",
        ]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &[
            "environment",
            "environment_version",
            "task_version",
            "run",
            "notification_inbox",
        ]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut stored = runs::apply(conn, events).await?;
        inbox::apply(conn, events).await?;
        let mut decoded = Vec::new();
        for event in events {
            let id = || event.aggregate_id.parse::<Uuid>().context("aggregate id");
            if let Some(e) = event.decode::<Environment>()? {
                decoded.push(Decoded::Environment(id()?, e));
            } else if let Some(e) = event.decode::<EnvironmentVersion>()? {
                decoded.push(Decoded::Version(id()?, e, event.time(), event.position));
            } else if let Some(e) = event.decode::<TaskVersion>()? {
                decoded.push(Decoded::TaskVersion(id()?, Box::new(e)));
            }
        }
        let version_keys: Vec<VersionKey> = decoded
            .iter()
            .filter_map(|d| match d {
                Decoded::Version(id, e, ..) if raised(*id, e).is_some() => Some(*id),
                Decoded::TaskVersion(_, e) => pins::named_version(e),
                _ => None,
            })
            .map(|version_id| VersionKey { version_id })
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
                Decoded::Version(..) | Decoded::TaskVersion(..) => false,
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
        let curated: Vec<Uuid> = owner_keys
            .iter()
            .map(|k| k.environment_id)
            .filter(|id| {
                owners
                    .get(&EnvironmentKey {
                        environment_id: *id,
                    })
                    .is_some_and(|o| o.company_id.is_none())
            })
            .collect();
        let task_versions: Vec<Uuid> = decoded
            .iter()
            .filter_map(|d| match d {
                Decoded::TaskVersion(id, ..) => Some(*id),
                _ => None,
            })
            .collect();
        let mut pins = Pins::load(conn, &task_versions, &curated).await?;
        // In log order: a notification names the environment as it was called when
        // the build ended, and the companies pinning it then, whatever batch the
        // events arrive in.
        let mut notifications: RowSet<Id, Notification> = RowSet::default();
        for d in decoded {
            match d {
                Decoded::Environment(id, event) => apply_environment(&mut owners, id, event),
                Decoded::TaskVersion(id, event) => pins.apply(&versions, id, &event),
                Decoded::Version(id, VersionEvent::VersionCreated(created), ..) => {
                    let row = VersionEnvironment {
                        version_id: id,
                        environment_id: created.environment_id,
                    };
                    versions.upsert_with(VersionKey { version_id: id }, || row);
                }
                Decoded::Version(id, event, at, position) => {
                    for row in notifications_of(&versions, &owners, &pins, id, &event, at) {
                        let row = Notification { position, ..row };
                        notifications.upsert_with(Id { id: row.id }, || row);
                    }
                }
            }
        }
        pins.store(conn).await?;
        VERSIONS.store(conn, versions).await?;
        OWNERS.store(conn, owners).await?;
        stored.extend(notifications.rows().map(|n| n.id));
        NOTIFICATIONS.store(conn, notifications).await?;
        recipients::store(conn, &stored).await?;
        Ok(())
    }
}
