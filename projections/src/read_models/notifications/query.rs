//! The notification center's queries: a user's notifications (those addressed to
//! them, their company, a department or room they belong to, or the company
//! managers when they are one), newest first, with whether they read each.

use chrono::{DateTime, Utc};
use serde_json::Value;
use sqlx::PgPool;
use uuid::Uuid;

/// Who reads.
#[derive(Debug, Clone, Copy)]
pub struct Reader {
    /// The user's company.
    pub company_id: Uuid,
    /// The user.
    pub user_id: Uuid,
    /// Whether they are a company manager.
    pub manager: bool,
}

/// A notification as a user sees it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct NotificationRow {
    /// The notification.
    pub id: Uuid,
    /// Its `SandboxNotificationEvent` kind.
    pub kind: String,
    /// Its facts.
    pub payload: Value,
    /// When it was raised.
    pub created_at: DateTime<Utc>,
    /// Where in the log it was raised (the stream's cursor).
    pub position: i64,
    /// Whether the user read it.
    pub read: bool,
}

/// Notifications of the reader's company addressed to them (`$1` company, `$2`
/// user, `$3` manager), as `n`, with `read`.
const ADDRESSED: &str = "
    SELECT n.id, n.kind, n.payload, n.created_at, n.position,
           (EXISTS (SELECT 1 FROM notification_reads r WHERE r.user_id = $2 AND r.notification_id = n.id)
            OR EXISTS (SELECT 1 FROM notification_read_marks m WHERE m.user_id = $2
                         AND CASE WHEN m.up_to_position IS NOT NULL THEN n.position <= m.up_to_position
                                  ELSE n.created_at <= m.until END)) AS read
      FROM notifications n
     WHERE n.company_id = $1
       AND EXISTS (SELECT 1 FROM jsonb_array_elements(n.recipients) r WHERE
              (r->>'scope' = 'user' AND r->>'id' = $2::text)
           OR (r->>'scope' = 'company_managers' AND $3)
           OR (r->>'scope' = 'company' AND r->>'id' = $1::text)
           OR (r->>'scope' = 'department' AND EXISTS (SELECT 1 FROM department_members d
                 WHERE d.department_id::text = r->>'id' AND d.user_id = $2 AND (d.is_member OR d.is_manager)))
           OR (r->>'scope' = 'chatroom' AND EXISTS (SELECT 1 FROM chatroom_members c
                 WHERE c.chatroom_id::text = r->>'id' AND c.member_kind = 'user' AND c.member_id = $2
                   AND (c.is_member OR c.is_manager))))";

/// A page of the reader's notifications, newest first, before the cursor
/// (`created_at`, `id`), only unread ones when asked.
pub async fn page(
    pool: &PgPool,
    reader: Reader,
    unread_only: bool,
    before: Option<(DateTime<Utc>, Uuid)>,
    limit: i64,
) -> sqlx::Result<Vec<NotificationRow>> {
    let (at, id) = before.unzip();
    sqlx::query_as(&format!(
        "SELECT * FROM ({ADDRESSED}) a
          WHERE (NOT $4 OR NOT a.read) AND ($5::timestamptz IS NULL OR (a.created_at, a.id) < ($5, $6))
          ORDER BY a.created_at DESC, a.id DESC LIMIT $7"
    ))
    .bind(reader.company_id)
    .bind(reader.user_id)
    .bind(reader.manager)
    .bind(unread_only)
    .bind(at)
    .bind(id)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The reader's notifications raised after a log position, in log order (the
/// live stream).
pub async fn after(
    pool: &PgPool,
    reader: Reader,
    position: i64,
    limit: i64,
) -> sqlx::Result<Vec<NotificationRow>> {
    sqlx::query_as(&format!(
        "SELECT * FROM ({ADDRESSED}) a WHERE a.position > $4 ORDER BY a.position, a.id LIMIT $5"
    ))
    .bind(reader.company_id)
    .bind(reader.user_id)
    .bind(reader.manager)
    .bind(position)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// The log position of the reader's newest notification (0 without any).
pub async fn newest_position(pool: &PgPool, reader: Reader) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT coalesce(max(a.position), 0) FROM ({ADDRESSED}) a"
    ))
    .bind(reader.company_id)
    .bind(reader.user_id)
    .bind(reader.manager)
    .fetch_one(pool)
    .await
}

/// How many of the reader's notifications are unread.
pub async fn unread_count(pool: &PgPool, reader: Reader) -> sqlx::Result<i64> {
    sqlx::query_scalar(&format!(
        "SELECT count(*) FROM ({ADDRESSED}) a WHERE NOT a.read"
    ))
    .bind(reader.company_id)
    .bind(reader.user_id)
    .bind(reader.manager)
    .fetch_one(pool)
    .await
}

/// Those of `ids` addressed to the reader.
pub async fn addressed(pool: &PgPool, reader: Reader, ids: &[Uuid]) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(&format!(
        "SELECT a.id FROM ({ADDRESSED}) a WHERE a.id = ANY($4)"
    ))
    .bind(reader.company_id)
    .bind(reader.user_id)
    .bind(reader.manager)
    .bind(ids)
    .fetch_all(pool)
    .await
}
