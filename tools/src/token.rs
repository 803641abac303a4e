//! `sandboxctl token mint`.

use crate::connection::Target;
use api::admin::directory::{company_id, entry_id};
use clap::Subcommand;

/// Token commands.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Print a fresh JWT for a user of the directory.
    Mint {
        /// Company reference from the directory file.
        #[arg(long)]
        company: String,
        /// User reference from the directory file.
        #[arg(long)]
        user: String,
        /// Lifetime of the token.
        #[arg(long, default_value = "24h")]
        ttl: humantime::Duration,
    },
}

/// Runs a token command.
pub async fn run(target: &Target, command: TokenCommand) -> anyhow::Result<()> {
    let TokenCommand::Mint { company, user, ttl } = command;
    let company = company_id(&company);
    let user_id = entry_id(company, "user", &user);
    let pool = target.pool().await?;
    let exists: bool =
        sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM users WHERE id = $1 AND company_id = $2)")
            .bind(user_id)
            .bind(company)
            .fetch_one(&pool)
            .await?;
    anyhow::ensure!(
        exists,
        "no user `{user}` in that company; apply the directory file first"
    );
    println!(
        "{}",
        target
            .jwt()?
            .mint(user_id, company, chrono::Duration::from_std(ttl.into())?)?
    );
    Ok(())
}
