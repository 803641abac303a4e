//! The `pricing` of the company settings (spec section 2, typed and nullable): the
//! operator's price per region and, when the company has one, its budget window
//! with what the company's runs hold and spent in it (`domain::pricing`).

use crate::error::ApiResult;
use crate::request::Caller;
use chrono::{DateTime, Utc};
use domain::pricing::{self, MICROS};
use projections::read_models::company_settings::query as settings;
use projections::read_models::pricing::query;
use serde::Serialize;
use utoipa::ToSchema;

/// `SandboxPricing`: `null` until the operator publishes a price or gives the
/// company a budget. Amounts are in units of `currency`.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxPricing {
    /// ISO 4217 currency (the budget's, else the first price's).
    pub currency: String,
    /// The published price of each region.
    pub regions: Vec<SandboxRegionPrice>,
    /// The company's budget; `null`: its runs are not metered.
    pub budget: Option<SandboxBudget>,
}

/// One region's price.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxRegionPrice {
    /// Region code.
    pub region: String,
    /// ISO 4217 currency.
    pub currency: String,
    /// Price of one vCPU-second.
    pub vcpu_second: f64,
    /// Price of one GiB-second of memory.
    pub memory_gib_second: f64,
    /// Whether the company's runs may be placed there (their holds use the highest
    /// price among such regions).
    pub placeable: bool,
}

/// The company's budget and its current window.
#[derive(Debug, Serialize, ToSchema)]
pub struct SandboxBudget {
    /// ISO 4217 currency.
    pub currency: String,
    /// Amount per window.
    pub amount: f64,
    /// Days per window.
    pub window_days: i64,
    /// Start of the first window.
    pub starts_at: DateTime<Utc>,
    /// The current window (`null` before the first: runs answer 422 `missing_window`).
    pub window_start: Option<DateTime<Utc>>,
    /// Its end.
    pub window_end: Option<DateTime<Utc>>,
    /// Held by runs of the window that have not ended.
    pub reserved: f64,
    /// Charged to runs of the window that ended.
    pub spent: f64,
    /// What a new run's envelope may take.
    pub available: f64,
}

fn units(micros: i64) -> f64 {
    micros as f64 / MICROS as f64
}

/// The regions the company's runs may be placed in: its allowed regions (all the
/// selectable ones until it records a policy) among the operator's live set.
pub async fn placeable_regions(caller: &Caller) -> ApiResult<Vec<String>> {
    let selectable = &caller.state.deployment.selectable_regions;
    let allowed = settings::recorded(caller.pool(), caller.principal.company_id)
        .await?
        .map(|row| row.allowed_regions)
        .unwrap_or_else(|| selectable.clone());
    Ok(allowed
        .into_iter()
        .filter(|region| selectable.contains(region))
        .collect())
}

/// The caller's company's pricing, as the settings show it.
pub async fn view(caller: &Caller) -> ApiResult<Option<SandboxPricing>> {
    let prices = query::prices(caller.pool()).await?;
    let budget = query::budget(caller.pool(), caller.principal.company_id).await?;
    let currency = match (&budget, prices.first()) {
        (Some(budget), _) => budget.currency.clone(),
        (None, Some(price)) => price.currency.clone(),
        (None, None) => return Ok(None),
    };
    let placeable = placeable_regions(caller).await?;
    let regions = prices
        .into_iter()
        .map(|p| SandboxRegionPrice {
            placeable: placeable.contains(&p.region),
            region: p.region,
            currency: p.currency,
            vcpu_second: units(p.vcpu_second_micros),
            memory_gib_second: units(p.memory_gib_second_micros),
        })
        .collect();
    let budget = match budget {
        None => None,
        Some(budget) => {
            let window = pricing::window(&budget, caller.ctx.time);
            let committed = match window {
                Some((start, end)) => {
                    let company = caller.principal.company_id;
                    query::committed(caller.pool(), company, start, end).await?
                }
                None => query::Committed::default(),
            };
            let available = budget.amount_micros - committed.reserved - committed.spent;
            Some(SandboxBudget {
                currency: budget.currency,
                amount: units(budget.amount_micros),
                window_days: budget.window_days,
                starts_at: budget.starts_at,
                window_start: window.map(|w| w.0),
                window_end: window.map(|w| w.1),
                reserved: units(committed.reserved),
                spent: units(committed.spent),
                available: units(available.max(0)),
            })
        }
    };
    Ok(Some(SandboxPricing {
        currency,
        regions,
        budget,
    }))
}
