//! The pricing envelope (spec sections 2 and 7): the operator publishes a price per
//! region (per vCPU-second and per GiB-second of memory, in micro-units of a
//! currency) and may give a company a budget per window. While a company has a
//! budget, every new run holds its envelope — the most it can cost: its timeout
//! at its resource profile's size, at the highest price among the regions it may
//! be placed in — against the current window; a run that would take the window
//! over the budget is refused (403 `budget_reservation_exceeded`) and nothing is
//! created. An ended run is charged for the seconds it ran, never more than its
//! hold. Without a budget nothing is metered.

use crate::AggregateExt;
use crate::catalog::ProfileSpec;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The aggregate id of the deployment's price list (a company's budget uses the
/// company id).
pub const PRICE_LIST: &str = "prices";

/// Days a budget window may last.
pub const WINDOW_DAYS: (i64, i64) = (1, 366);

/// Micro-units in one unit of a currency.
pub const MICROS: i64 = 1_000_000;

/// One region's price.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegionPrice {
    /// The region code.
    pub region: String,
    /// ISO 4217 currency.
    pub currency: String,
    /// Micro-units per vCPU-second.
    pub vcpu_second_micros: i64,
    /// Micro-units per GiB-second of memory.
    pub memory_gib_second_micros: i64,
}

/// A company's budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Budget {
    /// The company.
    pub company_id: Uuid,
    /// ISO 4217 currency.
    pub currency: String,
    /// Micro-units per window.
    pub amount_micros: i64,
    /// Days per window.
    pub window_days: i64,
    /// Where the first window starts; windows follow each other from there.
    pub starts_at: DateTime<Utc>,
}

/// Commands of [`Pricing`].
#[derive(Debug, Clone, PartialEq)]
pub enum PricingCommand {
    /// Publishes or changes a region's price (aggregate [`PRICE_LIST`]).
    SetPrice(RegionPrice),
    /// Gives a company a budget or changes it (aggregate: the company id).
    SetBudget(Budget),
    /// Removes a company's budget: its runs are no longer metered.
    ClearBudget {
        /// The company.
        company_id: Uuid,
    },
}

/// Events of [`Pricing`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum PricingEvent {
    /// A region's price.
    PriceSet(RegionPrice),
    /// A company's budget.
    BudgetSet(Budget),
    /// A company's budget was removed.
    BudgetCleared {
        /// The company.
        company_id: Uuid,
    },
}

impl DomainEvent for PricingEvent {
    fn event_type(&self) -> String {
        match self {
            Self::PriceSet(_) => "PriceSet",
            Self::BudgetSet(_) => "BudgetSet",
            Self::BudgetCleared { .. } => "BudgetCleared",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of pricing commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PricingError {
    /// A field out of bounds.
    #[error("{0}")]
    Invalid(&'static str),
}

impl SpecError for PricingError {
    fn code(&self) -> Code {
        Code::InvalidBody
    }
}

/// Whether a currency code looks like ISO 4217 (three capital letters).
fn currency_ok(currency: &str) -> bool {
    currency.len() == 3 && currency.bytes().all(|b| b.is_ascii_uppercase())
}

/// The price list or one company's budget.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Pricing {
    /// Prices by region (the price list).
    pub prices: Vec<RegionPrice>,
    /// The budget (a company's).
    pub budget: Option<Budget>,
}

impl Aggregate for Pricing {
    const TYPE: &'static str = "pricing";
    type Command = PricingCommand;
    type Event = PricingEvent;
    type Error = PricingError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            PricingCommand::SetPrice(price) => {
                if !currency_ok(&price.currency) {
                    return Err(PricingError::Invalid(
                        "the currency must be an ISO 4217 code",
                    ));
                }
                if price.vcpu_second_micros < 0 || price.memory_gib_second_micros < 0 {
                    return Err(PricingError::Invalid("prices cannot be negative"));
                }
                if self.prices.contains(&price) {
                    return Ok(());
                }
                PricingEvent::PriceSet(price)
            }
            PricingCommand::SetBudget(budget) => {
                if !currency_ok(&budget.currency) {
                    return Err(PricingError::Invalid(
                        "the currency must be an ISO 4217 code",
                    ));
                }
                if budget.amount_micros <= 0 {
                    return Err(PricingError::Invalid("a budget must be more than zero"));
                }
                if !(WINDOW_DAYS.0..=WINDOW_DAYS.1).contains(&budget.window_days) {
                    return Err(PricingError::Invalid("a window lasts 1..366 days"));
                }
                if self.budget.as_ref() == Some(&budget) {
                    return Ok(());
                }
                PricingEvent::BudgetSet(budget)
            }
            PricingCommand::ClearBudget { company_id } => {
                if self.budget.is_none() {
                    return Ok(());
                }
                PricingEvent::BudgetCleared { company_id }
            }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            PricingEvent::PriceSet(price) => {
                self.prices.retain(|p| p.region != price.region);
                self.prices.push(price);
            }
            PricingEvent::BudgetSet(budget) => self.budget = Some(budget),
            PricingEvent::BudgetCleared { .. } => self.budget = None,
        }
    }
}

impl AggregateExt for Pricing {}

/// The window of a budget that holds `now`, or `None` before the first one.
pub fn window(budget: &Budget, now: DateTime<Utc>) -> Option<(DateTime<Utc>, DateTime<Utc>)> {
    if now < budget.starts_at {
        return None;
    }
    let length = chrono::TimeDelta::days(budget.window_days);
    let elapsed = (now - budget.starts_at).num_seconds() / length.num_seconds();
    let start = budget.starts_at + length * elapsed as i32;
    Some((start, start + length))
}

/// What a run costs per second at a price, in micro-units × 1024 (memory is priced
/// per GiB, the profile counts MiB).
pub fn rate(profile: &ProfileSpec, price: &RegionPrice) -> Option<i64> {
    let vcpu = i64::from(profile.vcpu).checked_mul(price.vcpu_second_micros)?;
    let memory =
        i64::from(profile.customer_memory_mib).checked_mul(price.memory_gib_second_micros)?;
    vcpu.checked_mul(1024)?.checked_add(memory)
}

/// The cost of `seconds` at a rate from [`rate`], in micro-units, rounded up.
pub fn cost(seconds: i64, rate: i64) -> Option<i64> {
    let scaled = i128::from(seconds) * i128::from(rate);
    i64::try_from((scaled + 1023) / 1024).ok()
}

/// The hold a run places against its company's budget.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BudgetHold {
    /// ISO 4217 currency.
    pub currency: String,
    /// Micro-units × 1024 per second of running ([`rate`]).
    pub rate: i64,
    /// The envelope: micro-units held, the most the run can cost.
    pub amount_micros: i64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::ResourceProfile;

    #[test]
    fn windows_follow_each_other_from_the_start() {
        let starts_at: DateTime<Utc> = "2026-01-01T00:00:00Z".parse().unwrap();
        let budget = Budget {
            company_id: Uuid::nil(),
            currency: "USD".into(),
            amount_micros: MICROS,
            window_days: 30,
            starts_at,
        };
        assert_eq!(
            window(&budget, "2025-12-31T23:59:59Z".parse().unwrap()),
            None
        );
        let (start, end) = window(&budget, "2026-02-15T00:00:00Z".parse().unwrap()).unwrap();
        assert_eq!(
            start,
            "2026-01-31T00:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
        assert_eq!(
            end,
            "2026-03-02T00:00:00Z".parse::<DateTime<Utc>>().unwrap()
        );
    }

    #[test]
    fn an_envelope_is_the_timeout_at_the_profile_size_rounded_up() {
        let price = RegionPrice {
            region: "onprem".into(),
            currency: "USD".into(),
            vcpu_second_micros: 1000,
            memory_gib_second_micros: 1024,
        };
        // standard: 1 vCPU, 1280 MiB = 1.25 GiB → 1000 + 1280 micro-units a second.
        let rate = rate(ResourceProfile::Standard.spec(), &price).unwrap();
        assert_eq!(cost(60, rate), Some(60 * 2280));
        assert_eq!(cost(1, 1), Some(1), "rounded up");
        let huge = RegionPrice {
            vcpu_second_micros: i64::MAX,
            ..price
        };
        assert_eq!(super::rate(ResourceProfile::Standard.spec(), &huge), None);
    }
}
