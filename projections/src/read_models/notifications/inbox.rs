//! What each user has read (`notification_reads`, `notification_read_marks`), from
//! the events of their inbox.

use crate::log::StoredEvent;
use domain::notifications::{InboxEvent, NotificationInbox};
use sqlx::PgConnection;

/// Applies the inbox events of a batch.
pub(super) async fn apply(conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
    for event in events {
        match event.decode::<NotificationInbox>()? {
            Some(InboxEvent::NotificationsRead { user_id, ids }) => {
                sqlx::query(
                    "INSERT INTO notification_reads (user_id, notification_id)
                     SELECT $1, unnest($2::uuid[]) ON CONFLICT DO NOTHING",
                )
                .bind(user_id)
                .bind(&ids)
                .execute(&mut *conn)
                .await?;
            }
            Some(InboxEvent::AllNotificationsRead {
                user_id,
                until,
                up_to_position,
            }) => {
                sqlx::query(
                    "INSERT INTO notification_read_marks (user_id, until, up_to_position) VALUES ($1, $2, $3)
                     ON CONFLICT (user_id) DO UPDATE
                        SET until = GREATEST(notification_read_marks.until, EXCLUDED.until),
                            up_to_position = GREATEST(notification_read_marks.up_to_position,
                                                      EXCLUDED.up_to_position)",
                )
                .bind(user_id)
                .bind(until)
                .bind(up_to_position)
                .execute(&mut *conn)
                .await?;
            }
            None => {}
        }
    }
    Ok(())
}
