//! Which company pins which environment: a live (not archived) task version whose
//! contents name one of the environment's versions. A curated environment's new
//! ready version is announced (`curated_environment_published`) to every company
//! pinning the environment at that point of the log.

use super::{Table, VersionEnvironment, VersionKey};
use crate::read_models::RowSet;
use domain::tasks::version::TaskVersionEvent;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;
use std::collections::BTreeSet;
use uuid::Uuid;

const PINS: Table = Table {
    name: "notification_task_pins",
    key: &["task_version_id"],
    columns: &[
        ("task_version_id", "uuid"),
        ("company_id", "uuid"),
        ("environment_id", "uuid"),
    ],
};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub(super) struct PinKey {
    task_version_id: Uuid,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Pin {
    task_version_id: Uuid,
    company_id: Uuid,
    environment_id: Uuid,
}

/// The pins a batch works on.
pub(super) struct Pins(RowSet<PinKey, Pin>);

/// The environment version a task version event names, if any.
pub(super) fn named_version(event: &TaskVersionEvent) -> Option<Uuid> {
    match event {
        TaskVersionEvent::TaskVersionDrafted(drafted) => {
            Some(drafted.contents.environment_version_id)
        }
        TaskVersionEvent::TaskVersionEdited { contents } => Some(contents.environment_version_id),
        _ => None,
    }
}

impl Pins {
    /// Loads the pins of these task versions and of these environments.
    pub(super) async fn load(
        conn: &mut PgConnection,
        task_versions: &[Uuid],
        environments: &[Uuid],
    ) -> anyhow::Result<Self> {
        let keys: Vec<PinKey> = task_versions
            .iter()
            .map(|id| PinKey {
                task_version_id: *id,
            })
            .collect();
        let mut rows: Vec<Pin> = PINS.load(conn, &keys).await?;
        let pinned: Vec<Value> = sqlx::query_scalar(
            "SELECT to_jsonb(p) FROM notification_task_pins p WHERE environment_id = ANY($1)",
        )
        .bind(environments)
        .fetch_all(&mut *conn)
        .await?;
        for row in pinned {
            rows.push(serde_json::from_value(row)?);
        }
        Ok(Self(RowSet::loaded(rows.into_iter().map(|pin| {
            (
                PinKey {
                    task_version_id: pin.task_version_id,
                },
                pin,
            )
        }))))
    }

    /// Folds one task version event, finding the environment of the version it
    /// names in `versions`.
    pub(super) fn apply(
        &mut self,
        versions: &RowSet<VersionKey, VersionEnvironment>,
        task_version_id: Uuid,
        event: &TaskVersionEvent,
    ) {
        let key = PinKey { task_version_id };
        if let TaskVersionEvent::TaskVersionArchived = event {
            self.0.remove(&key);
            return;
        }
        let Some(version_id) = named_version(event) else {
            return;
        };
        let Some(environment_id) = versions
            .get(&VersionKey { version_id })
            .map(|v| v.environment_id)
        else {
            return;
        };
        let company_id = match event {
            TaskVersionEvent::TaskVersionDrafted(drafted) => Some(drafted.company_id),
            _ => None,
        };
        match (self.0.get_mut(&key), company_id) {
            (Some(pin), _) => pin.environment_id = environment_id,
            (None, Some(company_id)) => {
                self.0.upsert_with(key, || Pin {
                    task_version_id,
                    company_id,
                    environment_id,
                });
            }
            (None, None) => {}
        }
    }

    /// The companies pinning the environment, in id order.
    pub(super) fn companies(&self, environment_id: Uuid) -> BTreeSet<Uuid> {
        self.0
            .rows()
            .filter(|pin| pin.environment_id == environment_id)
            .map(|pin| pin.company_id)
            .collect()
    }

    /// Writes the batch's changes.
    pub(super) async fn store(self, conn: &mut PgConnection) -> anyhow::Result<()> {
        PINS.store(conn, self.0).await
    }
}
