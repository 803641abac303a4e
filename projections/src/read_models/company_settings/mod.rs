//! The `company_settings` projection: the recorded policy and operator limits of
//! each company.

pub mod query;

use super::{RowSet, Table};
use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use domain::settings::{CompanySettings, OperatorLimits, SettingsEvent};
use serde::{Deserialize, Serialize};
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

const COMPANY_SETTINGS: Table = Table {
    name: "company_settings",
    key: &["company_id"],
    columns: &[
        ("company_id", "uuid"),
        ("recorded", "boolean"),
        ("run_content_retention_days", "integer"),
        ("unreferenced_image_retention_days", "integer"),
        ("allowed_regions", "text[]"),
        ("policy_version", "bigint"),
        ("limits", "jsonb"),
    ],
};

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
struct Key {
    company_id: Uuid,
}

/// One company's settings (`company_settings`).
#[derive(Debug, Clone, Serialize, Deserialize, sqlx::FromRow)]
pub struct SettingsRow {
    /// The company.
    pub company_id: Uuid,
    /// Whether the policy was recorded (by the first read or a change); a row
    /// holding only operator limits is not.
    pub recorded: bool,
    /// Days run contents are kept.
    pub run_content_retention_days: i32,
    /// Days unreferenced images are kept.
    pub unreferenced_image_retention_days: i32,
    /// Where runtime jobs may be placed.
    pub allowed_regions: Vec<String>,
    /// The optimistic lock of the policy.
    pub policy_version: i64,
    /// The operator's limits.
    pub limits: Json<OperatorLimits>,
}

/// Projects [`CompanySettings`].
pub struct CompanySettingsProjection;

#[async_trait]
impl Projection for CompanySettingsProjection {
    fn name(&self) -> &'static str {
        "company_settings"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["company_settings"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["company_settings"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut changes = Vec::new();
        for event in events {
            if let Some(change) = event.decode::<CompanySettings>()? {
                let company_id =
                    Uuid::parse_str(&event.aggregate_id).context("settings id is a company id")?;
                changes.push((company_id, change));
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        let keys: Vec<Key> = changes
            .iter()
            .map(|(company_id, _)| Key {
                company_id: *company_id,
            })
            .collect();
        let loaded: Vec<SettingsRow> = COMPANY_SETTINGS.load(conn, &keys).await?;
        let mut rows = RowSet::loaded(loaded.into_iter().map(|r| {
            (
                Key {
                    company_id: r.company_id,
                },
                r,
            )
        }));
        for (company_id, event) in changes {
            let row = rows.upsert_with(Key { company_id }, || SettingsRow {
                company_id,
                recorded: false,
                run_content_retention_days: 0,
                unreferenced_image_retention_days: 0,
                allowed_regions: Vec::new(),
                policy_version: 0,
                limits: Json(OperatorLimits::default()),
            });
            match event {
                SettingsEvent::DefaultPolicyRecorded {
                    values,
                    policy_version,
                    ..
                }
                | SettingsEvent::PolicyUpdated {
                    values,
                    policy_version,
                } => {
                    row.recorded = true;
                    row.run_content_retention_days = values.run_content_retention_days;
                    row.unreferenced_image_retention_days =
                        values.unreferenced_image_retention_days;
                    row.allowed_regions = values.allowed_regions;
                    row.policy_version = policy_version;
                }
                SettingsEvent::OperatorLimitsChanged { limits, .. } => row.limits = Json(limits),
            }
        }
        COMPANY_SETTINGS.store(conn, rows).await
    }
}
