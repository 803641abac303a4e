//! The `pricing` projection: the operator's price per region (`region_prices`) and
//! each company's budget (`company_budgets`), which run admission and the
//! settings read ([`query`]).

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::pricing::{Pricing, PricingEvent};
use sqlx::PgConnection;

/// Projects [`Pricing`].
pub struct PricingProjection;

#[async_trait]
impl Projection for PricingProjection {
    fn name(&self) -> &'static str {
        "pricing"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["region_prices", "company_budgets"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["pricing"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            let Some(decoded) = event.decode::<Pricing>()? else {
                continue;
            };
            match decoded {
                PricingEvent::PriceSet(price) => {
                    sqlx::query(
                        "INSERT INTO region_prices (region, currency, vcpu_second_micros, memory_gib_second_micros)
                         VALUES ($1, $2, $3, $4)
                         ON CONFLICT (region) DO UPDATE SET currency = EXCLUDED.currency,
                                vcpu_second_micros = EXCLUDED.vcpu_second_micros,
                                memory_gib_second_micros = EXCLUDED.memory_gib_second_micros",
                    )
                    .bind(&price.region)
                    .bind(&price.currency)
                    .bind(price.vcpu_second_micros)
                    .bind(price.memory_gib_second_micros)
                    .execute(&mut *conn)
                    .await?;
                }
                PricingEvent::BudgetSet(budget) => {
                    sqlx::query(
                        "INSERT INTO company_budgets (company_id, currency, amount_micros, window_days, starts_at)
                         VALUES ($1, $2, $3, $4, $5)
                         ON CONFLICT (company_id) DO UPDATE SET currency = EXCLUDED.currency,
                                amount_micros = EXCLUDED.amount_micros, window_days = EXCLUDED.window_days,
                                starts_at = EXCLUDED.starts_at",
                    )
                    .bind(budget.company_id)
                    .bind(&budget.currency)
                    .bind(budget.amount_micros)
                    .bind(budget.window_days)
                    .bind(budget.starts_at)
                    .execute(&mut *conn)
                    .await?;
                }
                PricingEvent::BudgetCleared { company_id } => {
                    sqlx::query("DELETE FROM company_budgets WHERE company_id = $1")
                        .bind(company_id)
                        .execute(&mut *conn)
                        .await?;
                }
            }
        }
        Ok(())
    }
}
