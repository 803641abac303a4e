//! The `review` projection: review groups and templates, and the callback writes
//! approval rules held (`custom_table_staged_changes`) with where each stands.

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::review::{ReviewGroup, ReviewGroupEvent, ReviewTemplate, ReviewTemplateEvent};
use domain::tables::staged_change::{ChangeStatus, StagedChange, StagedChangeEvent};
use sqlx::PgConnection;
use sqlx::types::Json;

/// Projects [`ReviewGroup`], [`ReviewTemplate`] and [`StagedChange`].
pub struct ReviewProjection;

#[async_trait]
impl Projection for ReviewProjection {
    fn name(&self) -> &'static str {
        "review"
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "review_groups",
            "review_templates",
            "custom_table_staged_changes",
        ]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &[
            "review_group",
            "review_template",
            "custom_table_staged_change",
        ]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            let at = event.time();
            if let Some(ReviewGroupEvent::ReviewGroupCreated(group)) =
                event.decode::<ReviewGroup>()?
            {
                sqlx::query(
                    "INSERT INTO review_groups (id, company_id, name, description, member_ids, created_by, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
                )
                .bind(group.group_id)
                .bind(group.company_id)
                .bind(&group.name)
                .bind(&group.description)
                .bind(&group.member_ids)
                .bind(&group.created_by)
                .bind(at)
                .execute(&mut *conn)
                .await?;
            } else if let Some(ReviewTemplateEvent::ReviewTemplateCreated(template)) =
                event.decode::<ReviewTemplate>()?
            {
                sqlx::query(
                    "INSERT INTO review_templates (id, company_id, name, description, gates, require_signature, created_by, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT (id) DO NOTHING",
                )
                .bind(template.template_id)
                .bind(template.company_id)
                .bind(&template.name)
                .bind(&template.description)
                .bind(Json(&template.gates))
                .bind(template.require_signature)
                .bind(&template.created_by)
                .bind(at)
                .execute(&mut *conn)
                .await?;
            } else if let Some(change) = event.decode::<StagedChange>()? {
                let id: uuid::Uuid = event.aggregate_id.parse()?;
                apply_change(conn, id, change, at).await?;
            }
        }
        Ok(())
    }
}

async fn apply_change(
    conn: &mut PgConnection,
    id: uuid::Uuid,
    event: StagedChangeEvent,
    at: chrono::DateTime<chrono::Utc>,
) -> anyhow::Result<()> {
    match event {
        StagedChangeEvent::ChangeHeld(held) => {
            sqlx::query(
                "INSERT INTO custom_table_staged_changes (id, process_id, company_id, table_id, token_id, op,
                        record_id, data, rule_id, rule_label, template_id, gates, require_signature, author,
                        passed, status, created_at, updated_at, source)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, '{}', $15, $16, $16,
                         $17)
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(id)
            .bind(held.process_id)
            .bind(held.company_id)
            .bind(held.table_id)
            .bind(held.token_id)
            .bind(held.op.as_str())
            .bind(held.record_id)
            .bind(Json(&held.data))
            .bind(&held.rule_id)
            .bind(&held.rule_label)
            .bind(held.template_id)
            .bind(Json(&held.gates))
            .bind(held.require_signature)
            .bind(&held.author)
            .bind(ChangeStatus::Pending.as_str())
            .bind(at)
            .bind(crate::read_models::wire(&held.source))
            .execute(&mut *conn)
            .await?;
        }
        StagedChangeEvent::ChangeApproved { by, gates, .. } => {
            let gates: Vec<i32> = gates.into_iter().map(|g| g as i32).collect();
            sqlx::query(
                "UPDATE custom_table_staged_changes
                    SET passed = ARRAY(SELECT DISTINCT g FROM unnest(passed || $2) g ORDER BY g),
                        decided_by = $3, updated_at = $4
                  WHERE id = $1",
            )
            .bind(id)
            .bind(&gates)
            .bind(by)
            .bind(at)
            .execute(&mut *conn)
            .await?;
        }
        StagedChangeEvent::ChangeApplied => {
            sqlx::query(
                "UPDATE custom_table_staged_changes SET status = $2, updated_at = $3 WHERE id = $1",
            )
            .bind(id)
            .bind(ChangeStatus::Applied.as_str())
            .bind(at)
            .execute(&mut *conn)
            .await?;
        }
        StagedChangeEvent::ChangeRejected { by, reason } => {
            sqlx::query(
                "UPDATE custom_table_staged_changes
                    SET status = $2, decided_by = $3, reason = $4, updated_at = $5 WHERE id = $1",
            )
            .bind(id)
            .bind(ChangeStatus::Rejected.as_str())
            .bind(by)
            .bind(reason)
            .bind(at)
            .execute(&mut *conn)
            .await?;
        }
    }
    Ok(())
}
