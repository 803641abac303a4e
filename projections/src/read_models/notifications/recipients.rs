//! Who each notification is addressed to (`notification_recipients`): one row per
//! entry of its `recipients`, with its time and log position, so the center reads a
//! user's notifications as index ranges of that user's keys ([`super::query`]).

use sqlx::PgConnection;
use uuid::Uuid;

/// Writes the recipient rows of the given notifications from their `recipients`.
/// A notification raised again (the same id) keeps its recipients and moves to its
/// new time and position, as its row in `notifications` does. Notifications
/// outside any company, and recipients without an id (a curated environment's
/// owner), reach no user and get no row.
pub(super) async fn store(conn: &mut PgConnection, ids: &[Uuid]) -> sqlx::Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    sqlx::query(
        "INSERT INTO notification_recipients (notification_id, company_id, scope, target_id, created_at, position)
         SELECT DISTINCT n.id, n.company_id, r ->> 'scope', (r ->> 'id')::uuid, n.created_at, n.position
           FROM notifications n
                CROSS JOIN LATERAL jsonb_array_elements(n.recipients) r
          WHERE n.id = ANY($1) AND n.company_id IS NOT NULL AND r ->> 'id' IS NOT NULL
         ON CONFLICT (notification_id, scope, target_id)
            DO UPDATE SET created_at = EXCLUDED.created_at, position = EXCLUDED.position",
    )
    .bind(ids)
    .execute(conn)
    .await?;
    Ok(())
}
