//! Queries of the company-settings read model.

use super::SettingsRow;
use domain::settings::OperatorLimits;
use sqlx::PgPool;
use sqlx::types::Json;
use uuid::Uuid;

/// The company's recorded settings (`None` before the first read records them).
pub async fn recorded(pool: &PgPool, company: Uuid) -> sqlx::Result<Option<SettingsRow>> {
    sqlx::query_as("SELECT * FROM company_settings WHERE company_id = $1 AND recorded")
        .bind(company)
        .fetch_optional(pool)
        .await
}

/// The company's operator limits (defaults until the operator changes them).
pub async fn limits(pool: &PgPool, company: Uuid) -> sqlx::Result<OperatorLimits> {
    let limits: Option<Json<OperatorLimits>> =
        sqlx::query_scalar("SELECT limits FROM company_settings WHERE company_id = $1")
            .bind(company)
            .fetch_optional(pool)
            .await?;
    Ok(limits.map(|l| l.0).unwrap_or_default())
}
