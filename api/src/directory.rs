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
