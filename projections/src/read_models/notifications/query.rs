//! The notification center's queries: a user's notifications (those addressed to
//! them, their company, a department or room they belong to, or the company
//! managers when they are one), newest first, with whether they read each. Each
//! reads, per key of the user, an index range of `notification_recipients`, so
//! its cost follows the user's own notifications, not the company's.

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

/// The reader's recipient keys (`$1` company, `$2` user, `$3` manager) as the
/// common table `keys(scope, target_id)`: the user, the company, its managers when
/// they are one, and each department and room they belong to now.
const KEYS: &str = "
    keys(scope, target_id) AS (
        SELECT 'user', $2::uuid
        UNION ALL SELECT 'company', $1::uuid
        UNION ALL SELECT 'company_managers', $1::uuid WHERE $3
        UNION ALL SELECT 'department', d.department_id FROM department_members d
                   WHERE d.user_id = $2 AND (d.is_member OR d.is_manager)
        UNION ALL SELECT 'chatroom', c.chatroom_id FROM chatroom_members c
                   WHERE c.member_kind = 'user' AND c.member_id = $2 AND (c.is_member OR c.is_manager))";

/// The recipient rows `r` of one key `k` in the reader's company.
const OF_KEY: &str = "r.company_id = $1 AND r.scope = k.scope AND r.target_id = k.target_id";

/// Whether the user `$2` read the notification of recipient row `r`: marked by id,
/// or covered by their "all read" mark (by log position; a mark made before marks
/// held positions covers by time).
const READ: &str = "
    (EXISTS (SELECT 1 FROM notification_reads x WHERE x.user_id = $2 AND x.notification_id = r.notification_id)
     OR EXISTS (SELECT 1 FROM notification_read_marks m WHERE m.user_id = $2
                  AND CASE WHEN m.up_to_position IS NOT NULL THEN r.position <= m.up_to_position
                           ELSE r.created_at <= m.until END))";

/// A lower bound of the log positions of the user `$2`'s unread notifications (the
/// position their "all read" mark covers), so that reading them is an index range.
const UNREAD_FROM: &str = "
    coalesce((SELECT m.up_to_position FROM notification_read_marks m WHERE m.user_id = $2), -1)";

/// The notification columns of [`NotificationRow`] from `n`, with `h.read`.
const COLUMNS: &str = "n.id, n.kind, n.payload, n.created_at, n.position, h.read";

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
    // Each key's newest notifications before the cursor, then the newest of those.
    sqlx::query_as(&format!(
        "WITH {KEYS},
         hits AS (
             SELECT DISTINCT h.notification_id, h.created_at, h.read
               FROM keys k
                    CROSS JOIN LATERAL (
                        SELECT r.notification_id, r.created_at, {READ} AS read
                          FROM notification_recipients r
                         WHERE {OF_KEY}
                           AND (r.created_at, r.notification_id)
                               < (coalesce($5, 'infinity'), coalesce($6, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
                           AND (NOT $4 OR NOT {READ})
                         ORDER BY r.created_at DESC, r.notification_id DESC
                         LIMIT $7) h
              ORDER BY h.created_at DESC, h.notification_id DESC
              LIMIT $7)
         SELECT {COLUMNS} FROM hits h JOIN notifications n ON n.id = h.notification_id
          ORDER BY n.created_at DESC, n.id DESC"
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
        "WITH {KEYS},
         hits AS (
             SELECT DISTINCT h.notification_id, h.position, h.read
               FROM keys k
                    CROSS JOIN LATERAL (
                        SELECT r.notification_id, r.position, {READ} AS read
                          FROM notification_recipients r
                         WHERE {OF_KEY} AND r.position > $4
                         ORDER BY r.position, r.notification_id
                         LIMIT $5) h
              ORDER BY h.position, h.notification_id
              LIMIT $5)
         SELECT {COLUMNS} FROM hits h JOIN notifications n ON n.id = h.notification_id
          ORDER BY n.position, n.id"
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
        "WITH {KEYS}
         SELECT coalesce(max(newest.position), 0)
           FROM keys k
                CROSS JOIN LATERAL (SELECT max(r.position) AS position
                                      FROM notification_recipients r WHERE {OF_KEY}) newest"
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
        "WITH {KEYS}
         SELECT count(DISTINCT r.notification_id)
           FROM keys k JOIN notification_recipients r ON {OF_KEY}
          WHERE r.position > {UNREAD_FROM} AND NOT {READ}"
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
        "WITH {KEYS}
         SELECT DISTINCT r.notification_id
           FROM keys k JOIN notification_recipients r ON {OF_KEY}
          WHERE r.notification_id = ANY($4)"
    ))
    .bind(reader.company_id)
    .bind(reader.user_id)
    .bind(reader.manager)
    .bind(ids)
    .fetch_all(pool)
    .await
}
