//! The read models of a table's automation: its trigger set
//! (`custom_table_triggers`) and its approval rules (`custom_table_rules`), each
//! replaced whole by its table event.

use chrono::{DateTime, Utc};
use domain::tables::rule::ApprovalRule;
use domain::tables::trigger::Trigger;
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// Replaces a table's approval rule rows.
pub(super) async fn set_rules(
    conn: &mut PgConnection,
    table_id: Uuid,
    rules: &[ApprovalRule],
) -> anyhow::Result<()> {
    sqlx::query("DELETE FROM custom_table_rules WHERE table_id = $1")
        .bind(table_id)
        .execute(&mut *conn)
        .await?;
    for (position, rule) in rules.iter().enumerate() {
        sqlx::query(
            "INSERT INTO custom_table_rules (table_id, rule_id, position, definition) VALUES ($1, $2, $3, $4)",
        )
        .bind(table_id)
        .bind(&rule.id)
        .bind(position as i32)
        .bind(Json(rule))
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Replaces a table's trigger rows: removed triggers go, a trigger keeps its
/// `created_at`, and `updated_at` moves only when its definition changed. A
/// trigger's actions act as its author, who wrote its current definition: the
/// saver of the set becomes the author of the triggers it adds or changes, and a
/// trigger left as it was keeps its author (else another moderator saving the set
/// would lend their rights to every trigger in it).
pub(super) async fn set_triggers(
    conn: &mut PgConnection,
    table_id: Uuid,
    triggers: &[Trigger],
    saved_by: &str,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    let ids: Vec<&str> = triggers.iter().map(|t| t.id.as_str()).collect();
    sqlx::query(
        "DELETE FROM custom_table_triggers WHERE table_id = $1 AND NOT (trigger_id = ANY($2))",
    )
    .bind(table_id)
    .bind(&ids)
    .execute(&mut *conn)
    .await?;
    for (position, trigger) in triggers.iter().enumerate() {
        sqlx::query(
            "INSERT INTO custom_table_triggers (table_id, trigger_id, position, definition, created_at, updated_at, saved_by)
             VALUES ($1, $2, $3, $4, $5, $5, $6)
             ON CONFLICT (table_id, trigger_id) DO UPDATE
                SET position = EXCLUDED.position, definition = EXCLUDED.definition,
                    saved_by = CASE WHEN custom_table_triggers.definition = EXCLUDED.definition
                                    THEN custom_table_triggers.saved_by ELSE EXCLUDED.saved_by END,
                    updated_at = CASE WHEN custom_table_triggers.definition = EXCLUDED.definition
                                      THEN custom_table_triggers.updated_at ELSE EXCLUDED.updated_at END",
        )
        .bind(table_id)
        .bind(&trigger.id)
        .bind(position as i32)
        .bind(Json(trigger))
        .bind(at)
        .bind(saved_by)
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}
