//! `sandboxctl token mint`.

use crate::connection::Target;
use api::admin::directory::{company_id, entry_id};
use clap::Subcommand;

/// Token commands.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Print a fresh JWT for a user of the directory, or with `--root` an
    /// operator token for the `/root` routes, alone on one line.
    Mint {
        /// Company reference from the directory file.
        #[arg(long, required_unless_present = "root", conflicts_with = "root")]
        company: Option<String>,
        /// User reference from the directory file.
        #[arg(long, required_unless_present = "root", conflicts_with = "root")]
        user: Option<String>,
        /// An operator token instead of a user's.
        #[arg(long)]
        root: bool,
        /// Lifetime of the token.
        #[arg(long, default_value = "24h")]
        ttl: humantime::Duration,
    },
}

/// Runs a token command.
pub async fn run(target: &Target, command: TokenCommand) -> anyhow::Result<()> {
    let TokenCommand::Mint {
        company,
        user,
        root,
        ttl,
    } = command;
    let ttl = chrono::Duration::from_std(ttl.into())?;
    if root {
        println!("{}", target.jwt()?.mint_operator(ttl)?);
        return Ok(());
    }
    let (Some(company), Some(user)) = (company, user) else {
        anyhow::bail!("--company and --user name the token's user");
    };
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
    println!("{}", target.jwt()?.mint(user_id, company, ttl)?);
    Ok(())
}
