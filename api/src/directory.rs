//! Directory facts authorization needs, read from the directory read models.

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

/// A live room of the caller's company and where the caller stands in it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RoomStanding {
    /// The room.
    pub id: Uuid,
    /// Its department, if any.
    pub department_id: Option<Uuid>,
    /// Whether the caller is a member of the room.
    pub member: bool,
    /// Whether the caller manages the room: a company manager, the room's manager or
    /// the manager of the room's department (the chatroom manager ladder).
    pub manager: bool,
}

/// Loads a live room of `principal`'s company with the caller's standing; `None`
/// when there is no such room.
pub async fn room_standing(
    pool: &PgPool,
    principal: &domain::principal::Principal,
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
    .bind(principal.principal_type.as_str())
    .bind(principal.is_company_manager())
    .fetch_optional(pool)
    .await
}
