//! The `sharing` projection: share grants, bindings and the room menu they make.
//!
//! A binding applies only while its grant is live and its task active, and the
//! pinned version counts only while it is not archived. Those facts come from other
//! aggregates, so this projection follows them too (grants, task names and archives,
//! archived versions) and derives every binding's state in log order: a grant's
//! revoke or a task's archive revokes the bindings it carried, a binding enabled
//! after its grant was revoked starts revoked, a rename reaches every menu row. The
//! menu is then one indexed range of `bindings`.

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use anyhow::Context;
use async_trait::async_trait;
use chrono::{DateTime, Utc};
use domain::sharing::binding::{Binding, BindingEvent, Pin};
use domain::sharing::share::{Share, ShareEvent};
use domain::tasks::task::{Task, TaskEvent};
use domain::tasks::version::{TaskVersion, TaskVersionEvent};
use sqlx::PgConnection;
use sqlx::types::Json;
use std::str::FromStr;
use uuid::Uuid;

/// Projects [`Share`] and [`Binding`], with what they need of tasks and versions.
pub struct SharingProjection;

/// Why the projection revoked a binding on its own.
const SHARE_REVOKED: &str = "share_revoked";
const TASK_ARCHIVED: &str = "task_archived";
const SUPERSEDED: &str = "superseded";

struct Fold<'a> {
    id: Uuid,
    at: DateTime<Utc>,
    actor: String,
    conn: &'a mut PgConnection,
}

async fn fold_task(cx: Fold<'_>, event: TaskEvent) -> anyhow::Result<()> {
    match event {
        TaskEvent::TaskCreated(created) => {
            sqlx::query(
                "INSERT INTO sharing_tasks (task_id, name, archived) VALUES ($1, $2, false)
                 ON CONFLICT (task_id) DO NOTHING",
            )
            .bind(cx.id)
            .bind(created.name)
            .execute(&mut *cx.conn)
            .await?;
        }
        TaskEvent::TaskUpdated { name, .. } => {
            sqlx::query("UPDATE sharing_tasks SET name = $2 WHERE task_id = $1")
                .bind(cx.id)
                .bind(&name)
                .execute(&mut *cx.conn)
                .await?;
            sqlx::query(
                "UPDATE bindings SET task_name = $2 WHERE task_id = $1 AND task_name <> $2",
            )
            .bind(cx.id)
            .bind(&name)
            .execute(&mut *cx.conn)
            .await?;
        }
        TaskEvent::TaskArchived => {
            sqlx::query("UPDATE sharing_tasks SET archived = true WHERE task_id = $1")
                .bind(cx.id)
                .execute(&mut *cx.conn)
                .await?;
            revoke_where(cx, "task_id", TASK_ARCHIVED).await?;
        }
        TaskEvent::TaskVersionNumberAllocated { .. } => {}
    }
    Ok(())
}

/// Revokes the enabled bindings whose `column` equals the context's id.
async fn revoke_where(cx: Fold<'_>, column: &str, reason: &str) -> anyhow::Result<()> {
    sqlx::query(&format!(
        "UPDATE bindings SET state = 'revoked', revoke_reason = $2, revoked_at = $3, updated_at = $3
          WHERE {column} = $1 AND state = 'enabled'"
    ))
    .bind(cx.id)
    .bind(reason)
    .bind(cx.at)
    .execute(&mut *cx.conn)
    .await?;
    Ok(())
}

/// An archived or scrubbed version can no longer run: no binding of it applies
/// (`sharing_archived_versions` holds both).
async fn fold_version(cx: Fold<'_>, event: TaskVersionEvent) -> anyhow::Result<()> {
    if let TaskVersionEvent::TaskVersionArchived | TaskVersionEvent::TaskVersionScrubbed { .. } =
        event
    {
        sqlx::query(
            "INSERT INTO sharing_archived_versions (version_id) VALUES ($1) ON CONFLICT DO NOTHING",
        )
        .bind(cx.id)
        .execute(&mut *cx.conn)
        .await?;
        sqlx::query(
            "UPDATE bindings SET authority_applicable = false, updated_at = $2
              WHERE task_version_id = $1 AND authority_applicable",
        )
        .bind(cx.id)
        .bind(cx.at)
        .execute(&mut *cx.conn)
        .await?;
    }
    Ok(())
}

async fn fold_share(cx: Fold<'_>, event: ShareEvent) -> anyhow::Result<()> {
    match event {
        ShareEvent::ShareGranted(g) => {
            sqlx::query(
                "INSERT INTO share_grants (id, company_id, task_id, target_kind, target_id, generation,
                        secret_slot_policies, state, granted_by, created_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, 'active', $8, $9)
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(g.grant_id)
            .bind(g.company_id)
            .bind(g.task_id)
            .bind(g.target_kind.as_str())
            .bind(g.target_id)
            .bind(g.generation)
            .bind(Json(&g.secret_slot_policies))
            .bind(&cx.actor)
            .bind(cx.at)
            .execute(&mut *cx.conn)
            .await?;
        }
        ShareEvent::ShareRevoked { grant_id, reason } => {
            sqlx::query(
                "UPDATE share_grants SET state = 'revoked', revoke_reason = $2, revoked_at = $3
                  WHERE id = $1",
            )
            .bind(grant_id)
            .bind(reason)
            .bind(cx.at)
            .execute(&mut *cx.conn)
            .await?;
            revoke_where(Fold { id: grant_id, ..cx }, "share_grant_id", SHARE_REVOKED).await?;
        }
    }
    Ok(())
}

/// Why a pin cannot apply at this point of the log: its grant revoked or its task
/// archived (the binding starts or becomes revoked), and whether its version is
/// archived (the binding stays enabled without authority).
struct PinFacts {
    revoke_reason: Option<&'static str>,
    version_archived: bool,
    task_name: String,
}

async fn pin_facts(conn: &mut PgConnection, task_id: Uuid, pin: &Pin) -> anyhow::Result<PinFacts> {
    let (grant_live, task_archived, task_name, version_archived): (bool, bool, String, bool) =
        sqlx::query_as(
            "SELECT EXISTS (SELECT 1 FROM share_grants WHERE id = $1 AND state = 'active'),
                    coalesce((SELECT archived FROM sharing_tasks WHERE task_id = $2), false),
                    coalesce((SELECT name FROM sharing_tasks WHERE task_id = $2), ''),
                    EXISTS (SELECT 1 FROM sharing_archived_versions WHERE version_id = $3)",
        )
        .bind(pin.share_grant_id)
        .bind(task_id)
        .bind(pin.task_version_id)
        .fetch_one(&mut *conn)
        .await?;
    let revoke_reason = if task_archived {
        Some(TASK_ARCHIVED)
    } else if !grant_live {
        Some(SHARE_REVOKED)
    } else {
        None
    };
    Ok(PinFacts {
        revoke_reason,
        version_archived,
        task_name,
    })
}

async fn fold_binding(cx: Fold<'_>, event: BindingEvent) -> anyhow::Result<()> {
    match event {
        BindingEvent::BindingEnabled {
            binding_id,
            generation,
            chatroom_id,
            task_id,
            company_id,
            pin,
        } => {
            let facts = pin_facts(cx.conn, task_id, &pin).await?;
            sqlx::query(
                "UPDATE bindings SET state = 'revoked', revoke_reason = $3, revoked_at = $4, updated_at = $4
                  WHERE chatroom_id = $1 AND task_id = $2 AND state = 'enabled'",
            )
            .bind(chatroom_id)
            .bind(task_id)
            .bind(SUPERSEDED)
            .bind(cx.at)
            .execute(&mut *cx.conn)
            .await?;
            sqlx::query(
                "INSERT INTO bindings (id, company_id, chatroom_id, task_id, generation, share_grant_id,
                        task_version_id, version_number, task_version_digest, input_schema, secret_slots,
                        task_name, state, authority_applicable, revoke_reason, enabled_by,
                        created_at, updated_at, revoked_at)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12,
                         CASE WHEN $13::text IS NULL THEN 'enabled' ELSE 'revoked' END, $14, $13, $15,
                         $16, $16, CASE WHEN $13::text IS NULL THEN NULL ELSE $16 END)
                 ON CONFLICT (id) DO NOTHING",
            )
            .bind(binding_id)
            .bind(company_id)
            .bind(chatroom_id)
            .bind(task_id)
            .bind(generation)
            .bind(pin.share_grant_id)
            .bind(pin.task_version_id)
            .bind(pin.version_number)
            .bind(&pin.task_version_digest)
            .bind(pin.input_schema.as_ref().map(Json))
            .bind(Json(&pin.secret_slots))
            .bind(&facts.task_name)
            .bind(facts.revoke_reason)
            .bind(!facts.version_archived)
            .bind(&cx.actor)
            .bind(cx.at)
            .execute(&mut *cx.conn)
            .await?;
        }
        // A binding the projection already revoked (its grant or task went away
        // while the re-pin was decided) stays revoked: a new enablement is a new
        // generation.
        BindingEvent::BindingVersionAccepted { binding_id, pin } => {
            let task_id: Option<Uuid> =
                sqlx::query_scalar("SELECT task_id FROM bindings WHERE id = $1")
                    .bind(binding_id)
                    .fetch_optional(&mut *cx.conn)
                    .await?;
            let Some(task_id) = task_id else {
                return Ok(());
            };
            let facts = pin_facts(cx.conn, task_id, &pin).await?;
            sqlx::query(
                "UPDATE bindings SET share_grant_id = $2, task_version_id = $3, version_number = $4,
                        task_version_digest = $5, input_schema = $6, secret_slots = $7,
                        authority_applicable = $8, updated_at = $10,
                        state = CASE WHEN $9::text IS NULL THEN 'enabled' ELSE 'revoked' END,
                        revoke_reason = $9, revoked_at = CASE WHEN $9::text IS NULL THEN NULL ELSE $10 END
                  WHERE id = $1 AND state = 'enabled'",
            )
            .bind(binding_id)
            .bind(pin.share_grant_id)
            .bind(pin.task_version_id)
            .bind(pin.version_number)
            .bind(&pin.task_version_digest)
            .bind(pin.input_schema.as_ref().map(Json))
            .bind(Json(&pin.secret_slots))
            .bind(!facts.version_archived)
            .bind(facts.revoke_reason)
            .bind(cx.at)
            .execute(&mut *cx.conn)
            .await?;
        }
        BindingEvent::BindingRevoked { binding_id, reason } => {
            sqlx::query(
                "UPDATE bindings SET state = 'revoked', revoke_reason = $2, revoked_at = $3, updated_at = $3
                  WHERE id = $1 AND state = 'enabled'",
            )
            .bind(binding_id)
            .bind(reason)
            .bind(cx.at)
            .execute(&mut *cx.conn)
            .await?;
        }
    }
    Ok(())
}

#[async_trait]
impl Projection for SharingProjection {
    fn name(&self) -> &'static str {
        "sharing"
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "share_grants",
            "bindings",
            "sharing_tasks",
            "sharing_archived_versions",
        ]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["task", "task_version", "share", "binding"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            let cx = Fold {
                id: Uuid::from_str(&event.aggregate_id).context("aggregate id")?,
                at: event.time(),
                actor: event.actor(),
                conn: &mut *conn,
            };
            if let Some(e) = event.decode::<Task>()? {
                fold_task(cx, e).await?;
            } else if let Some(e) = event.decode::<TaskVersion>()? {
                fold_version(cx, e).await?;
            } else if let Some(e) = event.decode::<Share>()? {
                fold_share(cx, e).await?;
            } else if let Some(e) = event.decode::<Binding>()? {
                fold_binding(cx, e).await?;
            }
        }
        Ok(())
    }
}
