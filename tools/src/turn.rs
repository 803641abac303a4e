//! `sandboxctl turn mint`: a signed human turn context for the agent tools
//! (`X-Sandbox-Turn`), as the chat platform would send it.

use crate::connection::Target;
use api::admin::directory::{company_id, entry_id};
use api::agent::turn::TurnClaims;
use clap::Subcommand;
use domain::principal::PrincipalType;

/// Turn commands.
#[derive(Debug, Subcommand)]
pub enum TurnCommand {
    /// Print a human turn of a user in a room, alone on one line.
    Mint {
        /// Company reference from the directory file.
        #[arg(long)]
        company: String,
        /// User reference from the directory file.
        #[arg(long)]
        user: String,
        /// Chatroom reference from the directory file.
        #[arg(long)]
        room: String,
        /// The message's position in the room (strictly increasing).
        #[arg(long)]
        seq: i64,
        /// The message's id (default: `msg-<seq>`).
        #[arg(long)]
        message_id: Option<String>,
        /// Lifetime of the turn.
        #[arg(long, default_value = "600s")]
        ttl: humantime::Duration,
    },
}

/// Runs a turn command.
pub async fn run(target: &Target, command: TurnCommand) -> anyhow::Result<()> {
    let TurnCommand::Mint {
        company,
        user,
        room,
        seq,
        message_id,
        ttl,
    } = command;
    let company = company_id(&company);
    let user_id = entry_id(company, "user", &user);
    let room_id = entry_id(company, "chatroom", &room);
    let pool = target.pool().await?;
    let (user_known, room_known): (bool, bool) = sqlx::query_as(
        "SELECT EXISTS (SELECT 1 FROM users WHERE id = $1 AND company_id = $3),
                EXISTS (SELECT 1 FROM chatrooms WHERE id = $2 AND company_id = $3)",
    )
    .bind(user_id)
    .bind(room_id)
    .bind(company)
    .fetch_one(&pool)
    .await?;
    anyhow::ensure!(
        user_known,
        "no user `{user}` in that company; apply the directory file first"
    );
    anyhow::ensure!(
        room_known,
        "no chatroom `{room}` in that company; apply the directory file first"
    );
    let now = chrono::Utc::now().timestamp();
    let ttl = std::time::Duration::from(ttl).as_secs() as i64;
    let claims = TurnClaims {
        chatroom_id: room_id,
        message_id: message_id.unwrap_or_else(|| format!("msg-{seq}")),
        message_seq: seq,
        principal_type: PrincipalType::User,
        principal_id: user_id,
        human: true,
        iat: now,
        exp: now + ttl,
    };
    println!("{}", target.turn()?.mint(claims)?);
    Ok(())
}
