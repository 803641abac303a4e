//! The `secrets` projection: secret bindings (masked: which slot holds a value for
//! which consumer, never the value) and exact-version approvals.

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::secrets::approval::{SecretApproval, SecretApprovalEvent};
use domain::secrets::binding::{SecretBinding, SecretBindingEvent};
use sqlx::PgConnection;

/// Projects [`SecretBinding`] and [`SecretApproval`].
pub struct SecretsProjection;

async fn fold_binding(
    conn: &mut PgConnection,
    at: DateTime<Utc>,
    by: &str,
    event: SecretBindingEvent,
) -> anyhow::Result<()> {
    match event {
        SecretBindingEvent::SecretBound {
            binding_id,
            generation,
            target,
            version,
            ..
        } => {
            sqlx::query(
                "INSERT INTO secret_bindings (id, company_id, consumer_scope, consumer_id, task_id,
                        slot_name, generation, state, value_version_id, byte_size, version_count,
                        written_by, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9, 1, $10, $11, $11)
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(binding_id)
            .bind(target.company_id)
            .bind(target.consumer_scope.as_str())
            .bind(target.consumer_id)
            .bind(target.task_id)
            .bind(&target.slot_name)
            .bind(generation)
            .bind(version.value_version_id)
            .bind(version.byte_size)
            .bind(by)
            .bind(at)
            .execute(conn)
            .await?;
        }
        SecretBindingEvent::SecretRotated {
            binding_id,
            version,
            ..
        } => {
            sqlx::query(
                "UPDATE secret_bindings SET value_version_id = $2, byte_size = $3,
                        version_count = version_count + 1, written_by = $4, updated_at = $5
                  WHERE id = $1",
            )
            .bind(binding_id)
            .bind(version.value_version_id)
            .bind(version.byte_size)
            .bind(by)
            .bind(at)
            .execute(conn)
            .await?;
        }
        SecretBindingEvent::SecretRevoked { binding_id, .. } => {
            sqlx::query(
                "UPDATE secret_bindings SET state = 'revoked', value_version_id = NULL,
                        byte_size = NULL, written_by = $2, updated_at = $3, revoked_at = $3
                  WHERE id = $1",
            )
            .bind(binding_id)
            .bind(by)
            .bind(at)
            .execute(conn)
            .await?;
        }
    }
    Ok(())
}

async fn fold_approval(
    conn: &mut PgConnection,
    at: DateTime<Utc>,
    by: &str,
    event: SecretApprovalEvent,
) -> anyhow::Result<()> {
    match event {
        SecretApprovalEvent::SecretApprovalGranted {
            approval_id,
            generation,
            terms,
        } => {
            sqlx::query(
                "UPDATE secret_approvals SET state = 'revoked', revoke_reason = 'superseded',
                        revoked_at = $4
                  WHERE task_version_id = $1 AND consumer_scope = $2 AND consumer_id = $3
                    AND state = 'active'",
            )
            .bind(terms.task_version_id)
            .bind(terms.consumer_scope.as_str())
            .bind(terms.consumer_id)
            .bind(at)
            .execute(&mut *conn)
            .await?;
            sqlx::query(
                "INSERT INTO secret_approvals (id, company_id, consumer_scope, consumer_id, task_id,
                        task_version_id, task_version_digest, slot_names, source, generation,
                        state, approved_by, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 'active', $11, $12)
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(approval_id)
            .bind(terms.company_id)
            .bind(terms.consumer_scope.as_str())
            .bind(terms.consumer_id)
            .bind(terms.task_id)
            .bind(terms.task_version_id)
            .bind(&terms.task_version_digest)
            .bind(&terms.slot_names)
            .bind(super::wire(&terms.source))
            .bind(generation)
            .bind(by)
            .bind(at)
            .execute(conn)
            .await?;
        }
        SecretApprovalEvent::SecretApprovalRevoked {
            approval_id,
            reason,
        } => {
            sqlx::query(
                "UPDATE secret_approvals SET state = 'revoked', revoke_reason = $2, revoked_at = $3
                  WHERE id = $1 AND state = 'active'",
            )
            .bind(approval_id)
            .bind(reason)
            .bind(at)
            .execute(conn)
            .await?;
        }
    }
    Ok(())
}

#[async_trait]
impl Projection for SecretsProjection {
    fn name(&self) -> &'static str {
        "secrets"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["secret_bindings", "secret_approvals"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["secret_binding", "secret_approval"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            let by = event.actor();
            if let Some(e) = event.decode::<SecretBinding>()? {
                fold_binding(conn, event.time(), &by, e).await?;
            } else if let Some(e) = event.decode::<SecretApproval>()? {
                fold_approval(conn, event.time(), &by, e).await?;
            }
        }
        Ok(())
    }
}
