//! Queries of the directory read models that authorization needs: who manages a
//! department, where a caller stands in a room, which rooms and departments a
//! caller manages.
//!
//! The chatroom manager ladder is written here once: a room's manager is a company
//! manager, a manager of the room, or (for users) a manager of the room's
//! department.

use domain::principal::Principal;
use domain::tables::grants::Subject;
use sqlx::PgPool;
use uuid::Uuid;

/// Whether the user manages the department.
pub async fn manages_department(pool: &PgPool, user: Uuid, department: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM department_members WHERE department_id = $1 AND user_id = $2 AND is_manager)",
    )
    .bind(department)
    .bind(user)
    .fetch_one(pool)
    .await
}

/// Whether the department exists in the company.
pub async fn department_in_company(
    pool: &PgPool,
    company: Uuid,
    department: Uuid,
) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM departments WHERE id = $1 AND company_id = $2)",
    )
    .bind(department)
    .bind(company)
    .fetch_one(pool)
    .await
}

/// Whether the room is a live room of the company.
pub async fn live_room_in_company(pool: &PgPool, company: Uuid, room: Uuid) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM chatrooms WHERE id = $1 AND company_id = $2 AND NOT archived)",
    )
    .bind(room)
    .bind(company)
    .fetch_one(pool)
    .await
}

/// A live room of the caller's company and where the caller stands in it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RoomStanding {
    /// The room.
    pub id: Uuid,
    /// Its department, if any.
    pub department_id: Option<Uuid>,
    /// Whether the caller is a member of the room.
    pub member: bool,
    /// Whether the caller manages the room (the chatroom manager ladder).
    pub manager: bool,
}

/// A live room of `principal`'s company with the caller's standing; `None` when
/// there is no such room.
pub async fn room_standing(
    pool: &PgPool,
    principal: &Principal,
    room: Uuid,
) -> sqlx::Result<Option<RoomStanding>> {
    sqlx::query_as(
        "SELECT r.id, r.department_id,
                coalesce(m.is_member, false) OR coalesce(m.is_manager, false) AS member,
                $5 OR coalesce(m.is_manager, false)
                   OR ($4 = 'user' AND EXISTS (SELECT 1 FROM department_members d
                        WHERE d.department_id = r.department_id AND d.user_id = $3 AND d.is_manager)) AS manager
           FROM chatrooms r
           LEFT JOIN chatroom_members m ON m.chatroom_id = r.id AND m.member_kind = $4 AND m.member_id = $3
          WHERE r.id = $1 AND r.company_id = $2 AND NOT r.archived",
    )
    .bind(room)
    .bind(principal.company_id)
    .bind(principal.principal_id)
    .bind(principal.principal_type)
    .bind(principal.is_company_manager())
    .fetch_optional(pool)
    .await
}

/// The live rooms a user manages directly or through their department (at most
/// `limit`, by id). Company managers manage every room and are not asked.
pub async fn managed_room_ids(
    pool: &PgPool,
    principal: &Principal,
    limit: i64,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT r.id FROM chatrooms r
          WHERE r.company_id = $1 AND NOT r.archived AND $4 = 'user' AND (
                EXISTS (SELECT 1 FROM chatroom_members m WHERE m.chatroom_id = r.id
                          AND m.member_kind = $4 AND m.member_id = $2 AND m.is_manager)
             OR EXISTS (SELECT 1 FROM department_members d WHERE d.department_id = r.department_id
                          AND d.user_id = $2 AND d.is_manager))
          ORDER BY r.id LIMIT $3",
    )
    .bind(principal.company_id)
    .bind(principal.principal_id)
    .bind(limit)
    .bind(principal.principal_type)
    .fetch_all(pool)
    .await
}

/// The departments a user may own resources in: every department for a company
/// manager, else the ones they manage (at most `limit`, by id).
pub async fn manageable_department_ids(
    pool: &PgPool,
    principal: &Principal,
    limit: i64,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT d.id FROM departments d
          WHERE d.company_id = $1 AND $4 AND ($5 OR EXISTS (SELECT 1 FROM department_members m
                 WHERE m.department_id = d.id AND m.user_id = $2 AND m.is_manager))
          ORDER BY d.id LIMIT $3",
    )
    .bind(principal.company_id)
    .bind(principal.principal_id)
    .bind(limit)
    .bind(principal.principal_type == domain::principal::PrincipalType::User)
    .bind(principal.is_company_manager())
    .fetch_all(pool)
    .await
}

/// The live rooms holding bindings of `task` that the caller manages (as the
/// room's or its department's manager; company managers are not asked).
pub async fn managed_rooms_binding(
    pool: &PgPool,
    principal: &Principal,
    task: Uuid,
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar(
        "SELECT r.id FROM chatrooms r
          WHERE r.company_id = $2 AND NOT r.archived AND $4 = 'user'
            AND r.id IN (SELECT chatroom_id FROM bindings WHERE task_id = $1)
            AND (EXISTS (SELECT 1 FROM chatroom_members m WHERE m.chatroom_id = r.id
                           AND m.member_kind = $4 AND m.member_id = $3 AND m.is_manager)
              OR EXISTS (SELECT 1 FROM department_members d WHERE d.department_id = r.department_id
                           AND d.user_id = $3 AND d.is_manager))",
    )
    .bind(task)
    .bind(principal.company_id)
    .bind(principal.principal_id)
    .bind(principal.principal_type)
    .fetch_all(pool)
    .await
}

/// Whether a grant subject exists in a company (a chatroom must be live; the default
/// subject always exists).
pub async fn subject_in_company(
    pool: &PgPool,
    company: Uuid,
    subject: Subject,
) -> sqlx::Result<bool> {
    let sql = match subject {
        Subject::User(_) => "SELECT EXISTS (SELECT 1 FROM users WHERE id = $1 AND company_id = $2)",
        Subject::SocialClient(_) => {
            "SELECT EXISTS (SELECT 1 FROM social_clients WHERE id = $1 AND company_id = $2)"
        }
        Subject::Department(_) => {
            "SELECT EXISTS (SELECT 1 FROM departments WHERE id = $1 AND company_id = $2)"
        }
        Subject::Chatroom(_) => {
            "SELECT EXISTS (SELECT 1 FROM chatrooms WHERE id = $1 AND company_id = $2 AND NOT archived)"
        }
        Subject::Default => return Ok(true),
    };
    sqlx::query_scalar(sql)
        .bind(subject.id())
        .bind(company)
        .fetch_one(pool)
        .await
}

/// The users of a company among `ids`.
pub async fn users_in_company(
    pool: &PgPool,
    company: Uuid,
    ids: &[Uuid],
) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar("SELECT id FROM users WHERE company_id = $1 AND id = ANY($2)")
        .bind(company)
        .bind(ids)
        .fetch_all(pool)
        .await
}
