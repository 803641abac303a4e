//! The `context_uploads` projection: upload sessions, as the upload routes, the
//! staging-slot count and the expiry sweep read them.

pub mod query;

use super::{RowSet, Table};
use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::environments::archive::ArchiveFormat;
use domain::environments::upload::{ContextUpload, UploadEvent, UploadState};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use std::collections::HashSet;
use uuid::Uuid;

const UPLOADS: Table = Table {
    name: "context_uploads",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("environment_id", "uuid"),
        ("company_id", "uuid"),
        ("state", "text"),
        ("declared_bytes", "bigint"),
        ("archive_format", "text"),
        ("received_bytes", "bigint"),
        ("digest", "text"),
        ("owned_object_id", "uuid"),
        ("error_detail", "text"),
        ("created_at", "timestamptz"),
        ("expires_at", "timestamptz"),
        ("capability_expires_at", "timestamptz"),
        ("updated_at", "timestamptz"),
    ],
};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
struct Id {
    id: Uuid,
}

/// An upload session (`context_uploads`).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow)]
pub struct UploadRow {
    /// Session id.
    pub id: Uuid,
    /// Its environment.
    pub environment_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Session state.
    pub state: UploadState,
    /// Bytes the PUT may send at most.
    pub declared_bytes: i64,
    /// Archive format.
    pub archive_format: ArchiveFormat,
    /// Bytes received.
    pub received_bytes: Option<i64>,
    /// `sha256:` of the received bytes.
    pub digest: Option<String>,
    /// The owned object, once completed.
    pub owned_object_id: Option<Uuid>,
    /// The rule that refused the last complete.
    pub error_detail: Option<String>,
    /// Opened.
    pub created_at: DateTime<Utc>,
    /// Expires.
    pub expires_at: DateTime<Utc>,
    /// When the PUT capability stops working.
    pub capability_expires_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

/// Projects [`ContextUpload`].
pub struct ContextUploadsProjection;

#[async_trait]
impl Projection for ContextUploadsProjection {
    fn name(&self) -> &'static str {
        "context_uploads"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["context_uploads"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["context_upload"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut changes = Vec::new();
        for event in events {
            if let Some(change) = event.decode::<ContextUpload>()? {
                let id: Uuid = event.aggregate_id.parse().context("upload id")?;
                changes.push((id, change, event.time()));
            }
        }
        let created: HashSet<Uuid> = changes
            .iter()
            .filter(|(_, e, _)| matches!(e, UploadEvent::UploadInitiated(_)))
            .map(|(id, _, _)| *id)
            .collect();
        let keys: Vec<Id> = changes
            .iter()
            .filter(|(id, _, _)| !created.contains(id))
            .map(|(id, _, _)| Id { id: *id })
            .collect();
        let loaded: Vec<UploadRow> = UPLOADS.load(conn, &keys).await?;
        let mut rows = RowSet::loaded(loaded.into_iter().map(|r| (Id { id: r.id }, r)));
        for (id, event, at) in changes {
            if let UploadEvent::UploadInitiated(i) = event {
                rows.upsert_with(Id { id }, || UploadRow {
                    id,
                    environment_id: i.environment_id,
                    company_id: i.company_id,
                    state: UploadState::Uploading,
                    declared_bytes: i.declared_bytes,
                    archive_format: i.archive_format,
                    received_bytes: None,
                    digest: None,
                    owned_object_id: None,
                    error_detail: None,
                    created_at: at,
                    expires_at: i.expires_at,
                    capability_expires_at: i.capability_expires_at,
                    updated_at: at,
                });
                continue;
            }
            let Some(row) = rows.get_mut(&Id { id }) else {
                continue;
            };
            row.updated_at = at;
            match event {
                UploadEvent::UploadInitiated(_) => {}
                UploadEvent::UploadBytesReceived(staged) => {
                    row.received_bytes = Some(staged.byte_size);
                    row.digest = Some(staged.digest);
                }
                UploadEvent::UploadCompletionStarted => row.state = UploadState::Completing,
                UploadEvent::UploadCompletionFailed { error_detail, .. } => {
                    row.error_detail = Some(error_detail)
                }
                UploadEvent::UploadCompleted { owned_object_id } => {
                    row.state = UploadState::Completed;
                    row.owned_object_id = Some(owned_object_id);
                    row.error_detail = None;
                }
                UploadEvent::UploadAborted | UploadEvent::UploadExpired => {
                    row.state = UploadState::Aborted
                }
            }
        }
        UPLOADS.store(conn, rows).await
    }
}
