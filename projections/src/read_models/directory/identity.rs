//! The names identity tokens resolve through (`$user:<username>`,
//! `$smc:<platform>:<platform_user_id>`, `$room:<name>` or `<department>/<room>`,
//! `$dept:<name>`; spec `custom-tables.md` section 2): every principal of a company
//! under each name it can be written with.

use sqlx::PgPool;
use uuid::Uuid;

/// One principal under one of its names.
#[derive(Debug, Clone, PartialEq, Eq, sqlx::FromRow)]
pub struct NamedPrincipal {
    /// `user`, `smc`, `room` or `dept`.
    pub kind: String,
    /// The principal.
    pub id: Uuid,
    /// The token's body: a username, `<platform>:<platform_user_id>`, a live room's
    /// name (and `<department>/<room>` for a room of a department), a department's
    /// name.
    pub name: String,
}

/// Every principal of a company under every name it can be written with.
pub async fn named_principals(pool: &PgPool, company: Uuid) -> sqlx::Result<Vec<NamedPrincipal>> {
    sqlx::query_as(
        "SELECT 'user' AS kind, id, username AS name FROM users WHERE company_id = $1
         UNION ALL
         SELECT 'smc', id, platform || ':' || platform_user_id FROM social_clients WHERE company_id = $1
         UNION ALL
         SELECT 'room', id, name FROM chatrooms WHERE company_id = $1 AND NOT archived
         UNION ALL
         SELECT 'room', r.id, d.name || '/' || r.name
           FROM chatrooms r JOIN departments d ON d.id = r.department_id
          WHERE r.company_id = $1 AND NOT r.archived
         UNION ALL
         SELECT 'dept', id, name FROM departments WHERE company_id = $1",
    )
    .bind(company)
    .fetch_all(pool)
    .await
}
