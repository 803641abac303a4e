//! The `owned_objects` projection: which objects exist, whose they are, and their
//! deletion state.

pub mod query;

use super::{RowSet, Table};
use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::objects::{DeletionState, ObjectEvent, ObjectKind, OwnedObject};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use uuid::Uuid;

const OBJECTS: Table = Table {
    name: "owned_objects",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("kind", "text"),
        ("digest", "text"),
        ("byte_size", "bigint"),
        ("key", "text"),
        ("deletion_state", "text"),
        ("created_at", "timestamptz"),
    ],
};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
struct Id {
    id: Uuid,
}

/// A stored object (`owned_objects`).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow)]
pub struct ObjectRow {
    /// Id.
    pub id: Uuid,
    /// Its company (`None` for operator objects).
    pub company_id: Option<Uuid>,
    /// What it holds.
    pub kind: ObjectKind,
    /// `sha256:` of its bytes.
    pub digest: String,
    /// Its size.
    pub byte_size: i64,
    /// Object store key.
    pub key: String,
    /// Whether its bytes are still held.
    pub deletion_state: DeletionState,
    /// Stored.
    pub created_at: DateTime<Utc>,
}

/// Projects [`OwnedObject`].
pub struct OwnedObjectsProjection;

#[async_trait]
impl Projection for OwnedObjectsProjection {
    fn name(&self) -> &'static str {
        "owned_objects"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["owned_objects"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["owned_object"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut changes = Vec::new();
        for event in events {
            if let Some(change) = event.decode::<OwnedObject>()? {
                let id: Uuid = event.aggregate_id.parse().context("object id")?;
                changes.push((id, change, event.time()));
            }
        }
        let keys: Vec<Id> = changes
            .iter()
            .filter(|(_, e, _)| !matches!(e, ObjectEvent::ObjectStored(_)))
            .map(|(id, _, _)| Id { id: *id })
            .collect();
        let loaded: Vec<ObjectRow> = OBJECTS.load(conn, &keys).await?;
        let mut rows = RowSet::loaded(loaded.into_iter().map(|r| (Id { id: r.id }, r)));
        for (id, event, at) in changes {
            match event {
                ObjectEvent::ObjectStored(stored) => {
                    rows.upsert_with(Id { id }, || ObjectRow {
                        id,
                        company_id: stored.company_id,
                        kind: stored.kind,
                        digest: stored.digest,
                        byte_size: stored.byte_size as i64,
                        key: stored.key,
                        deletion_state: DeletionState::Active,
                        created_at: at,
                    });
                }
                ObjectEvent::ObjectDeletionRequested => {
                    if let Some(row) = rows.get_mut(&Id { id }) {
                        row.deletion_state = DeletionState::DeletePending;
                    }
                }
                ObjectEvent::ObjectDeleted => {
                    if let Some(row) = rows.get_mut(&Id { id }) {
                        row.deletion_state = DeletionState::Deleted;
                    }
                }
            }
        }
        OBJECTS.store(conn, rows).await
    }
}
