//! The pricing envelope at admission: while the company has a budget, a new run
//! holds the most it can cost against the current window, or is refused
//! (`domain::pricing`). Checked under the company's admission lock, so two
//! submissions never both take the last of a budget.

use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use crate::routes::sandbox::pricing::placeable_regions;
use domain::catalog::ResourceProfile;
use domain::error::Code;
use domain::pricing::{self, Budget, BudgetHold, MICROS};
use projections::read_models::pricing::query as prices;

fn units(micros: i64) -> f64 {
    micros as f64 / MICROS as f64
}

/// The hold a new run places under the company's `budget` (read once for the
/// runs admitted together; `None`: no budget, no hold); the refusals of the spec's
/// pricing rows otherwise. `also_reserved` is held by runs admitted together with
/// this one and not appended yet.
pub async fn hold(
    caller: &Caller,
    budget: Option<&Budget>,
    profile: ResourceProfile,
    timeout_seconds: i64,
    also_reserved: i64,
) -> ApiResult<Option<BudgetHold>> {
    let company = caller.principal.company_id;
    let Some(budget) = budget else {
        return Ok(None);
    };
    let Some((start, end)) = pricing::window(budget, caller.ctx.time) else {
        return Err(ApiError::code(
            Code::MissingWindow,
            format!(
                "the company's budget has no window yet; the first starts at {}",
                budget.starts_at.to_rfc3339()
            ),
        ));
    };
    let regions = placeable_regions(caller).await?;
    if regions.is_empty() {
        return Err(ApiError::code(
            Code::NoActiveRegion,
            "none of the company's allowed regions is active in this deployment",
        ));
    }
    let published = prices::prices(caller.pool()).await?;
    let mut rate = 0;
    for region in &regions {
        let Some(price) = published.iter().find(|p| &p.region == region) else {
            return Err(ApiError::code(
                Code::MissingPrice,
                format!("no price is published for region {region}"),
            )
            .with("region", region.as_str()));
        };
        if price.currency != budget.currency {
            return Err(ApiError::code(
                Code::InvalidEnvelope,
                format!(
                    "region {region} is priced in {} but the budget is in {}",
                    price.currency, budget.currency
                ),
            ));
        }
        let region_rate = pricing::rate(profile.spec(), price).ok_or_else(too_large)?;
        rate = rate.max(region_rate);
    }
    let amount = pricing::cost(timeout_seconds, rate).ok_or_else(too_large)?;
    let committed = prices::committed(caller.pool(), company, start, end).await?;
    let available = budget.amount_micros - committed.reserved - also_reserved - committed.spent;
    if amount > available {
        return Err(ApiError::code(
            Code::BudgetReservationExceeded,
            format!(
                "the run may cost {} {}; {} {} of the window's budget remain",
                units(amount),
                budget.currency,
                units(available.max(0)),
                budget.currency
            ),
        )
        .with("envelope", units(amount))
        .with("available", units(available.max(0)))
        .with("window_end", end.to_rfc3339()));
    }
    Ok(Some(BudgetHold {
        currency: budget.currency.clone(),
        rate,
        amount_micros: amount,
    }))
}

fn too_large() -> ApiError {
    ApiError::code(
        Code::InvalidEnvelope,
        "the run's envelope is too large to hold",
    )
}
