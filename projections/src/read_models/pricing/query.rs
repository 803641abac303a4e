//! Queries of the pricing read model, and the budget a company's runs hold.

use crate::read_models::runs::query::UNPROJECTED_SUBMISSIONS;
use chrono::{DateTime, Utc};
use domain::pricing::{Budget, RegionPrice};
use sqlx::PgPool;
use uuid::Uuid;

/// Every published region price, by region.
pub async fn prices(pool: &PgPool) -> sqlx::Result<Vec<RegionPrice>> {
    let rows: Vec<(String, String, i64, i64)> = sqlx::query_as(
        "SELECT region, currency, vcpu_second_micros, memory_gib_second_micros
           FROM region_prices ORDER BY region",
    )
    .fetch_all(pool)
    .await?;
    Ok(rows
        .into_iter()
        .map(|(region, currency, vcpu, memory)| RegionPrice {
            region,
            currency,
            vcpu_second_micros: vcpu,
            memory_gib_second_micros: memory,
        })
        .collect())
}

/// The company's budget, if it has one.
pub async fn budget(pool: &PgPool, company: Uuid) -> sqlx::Result<Option<Budget>> {
    let row: Option<(String, i64, i64, DateTime<Utc>)> = sqlx::query_as(
        "SELECT currency, amount_micros, window_days, starts_at FROM company_budgets
          WHERE company_id = $1",
    )
    .bind(company)
    .fetch_optional(pool)
    .await?;
    Ok(
        row.map(|(currency, amount_micros, window_days, starts_at)| Budget {
            company_id: company,
            currency,
            amount_micros,
            window_days,
            starts_at,
        }),
    )
}

/// What a window of a company's budget is committed to, in micro-units.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, sqlx::FromRow)]
pub struct Committed {
    /// The holds of runs that have not ended (submissions the read model does not
    /// show yet included).
    pub reserved: i64,
    /// The charges of runs that ended: the seconds they ran at their rate, never
    /// more than their hold.
    pub spent: i64,
}

/// The holds and charges of the company's runs queued in `[start, end)`.
pub async fn committed(
    pool: &PgPool,
    company: Uuid,
    start: DateTime<Utc>,
    end: DateTime<Utc>,
) -> sqlx::Result<Committed> {
    sqlx::query_as(&format!(
        "WITH {UNPROJECTED_SUBMISSIONS}
         SELECT (coalesce(sum(hold_amount) FILTER (WHERE terminal_at IS NULL), 0)
                 + (SELECT coalesce(sum((s -> 'hold' ->> 'amount_micros')::bigint), 0)
                      FROM unprojected WHERE s ->> 'company_id' = $1::text))::bigint AS reserved,
                coalesce(sum(least(hold_amount,
                    ceil(extract(epoch FROM terminal_at - started_at)::numeric * hold_rate / 1024)))
                  FILTER (WHERE terminal_at IS NOT NULL AND started_at IS NOT NULL), 0)::bigint AS spent
           FROM runs
          WHERE company_id = $1 AND hold_amount IS NOT NULL AND queued_at >= $2 AND queued_at < $3"
    ))
    .bind(company)
    .bind(start)
    .bind(end)
    .fetch_one(pool)
    .await
}
