//! `sandboxctl pricing set-price|set-budget|clear-budget|status`: the pricing
//! envelope. Prices are per region (per vCPU-second and per GiB-second of memory);
//! a company with a budget has every new run hold the most it can cost against
//! the current window (`domain::pricing`).

use crate::connection::{Target, command_bus, operator_name};
use api::admin::directory::company_id;
use api::admin::operator_metadata;
use clap::Subcommand;
use domain::pricing::{Budget, MICROS, PRICE_LIST, Pricing, PricingCommand, RegionPrice};
use projections::read_models::pricing::query;

/// Pricing commands.
#[derive(Debug, Subcommand)]
pub enum PricingAction {
    /// Publish or change a region's price.
    SetPrice {
        /// The region code.
        #[arg(long)]
        region: String,
        /// ISO 4217 currency.
        #[arg(long)]
        currency: String,
        /// Price of one vCPU-second.
        #[arg(long)]
        vcpu_second: f64,
        /// Price of one GiB-second of memory.
        #[arg(long)]
        memory_gib_second: f64,
    },
    /// Give a company (its directory reference) a budget per window.
    SetBudget {
        /// The company.
        #[arg(long)]
        company: String,
        /// ISO 4217 currency (the regions' prices must use it).
        #[arg(long)]
        currency: String,
        /// The amount per window.
        #[arg(long)]
        amount: f64,
        /// Days per window (1..366).
        #[arg(long)]
        window_days: i64,
        /// Start of the first window (RFC 3339); default now.
        #[arg(long)]
        starts: Option<chrono::DateTime<chrono::Utc>>,
    },
    /// Remove a company's budget: its runs are no longer metered.
    ClearBudget {
        /// The company.
        #[arg(long)]
        company: String,
    },
    /// Print the prices as JSON.
    Status,
}

fn micros(amount: f64) -> i64 {
    (amount * MICROS as f64).round() as i64
}

/// Runs a pricing command.
pub async fn run(target: &Target, action: PricingAction) -> anyhow::Result<()> {
    let pool = target.pool().await?;
    let (aggregate, command, done) = match action {
        PricingAction::Status => {
            let prices = query::prices(&pool).await?;
            println!("{}", serde_json::to_string_pretty(&prices)?);
            return Ok(());
        }
        PricingAction::SetPrice {
            region,
            currency,
            vcpu_second,
            memory_gib_second,
        } => {
            if domain::catalog::region(&region).is_none() {
                anyhow::bail!("{region} is not a region code");
            }
            let done = format!("{region} priced");
            let price = RegionPrice {
                region,
                currency,
                vcpu_second_micros: micros(vcpu_second),
                memory_gib_second_micros: micros(memory_gib_second),
            };
            (
                PRICE_LIST.to_string(),
                PricingCommand::SetPrice(price),
                done,
            )
        }
        PricingAction::SetBudget {
            company,
            currency,
            amount,
            window_days,
            starts,
        } => {
            let company_id = company_id(&company);
            let budget = Budget {
                company_id,
                currency,
                amount_micros: micros(amount),
                window_days,
                starts_at: starts.unwrap_or_else(chrono::Utc::now),
            };
            let done = format!("{company} budgeted");
            (
                company_id.to_string(),
                PricingCommand::SetBudget(budget),
                done,
            )
        }
        PricingAction::ClearBudget { company } => {
            let company_id = company_id(&company);
            let done = format!("{company} unmetered");
            (
                company_id.to_string(),
                PricingCommand::ClearBudget { company_id },
                done,
            )
        }
    };
    let (bus, cancel) = command_bus(&pool).await?;
    let result = bus
        .execute::<Pricing>(&aggregate, command, &operator_metadata(&operator_name()))
        .await;
    cancel.cancel();
    result?;
    println!("{done}");
    Ok(())
}
