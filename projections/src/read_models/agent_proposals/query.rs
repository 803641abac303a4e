//! Queries of the `agent_proposals` read model: one proposal, a principal's pending
//! ones, and whether a turn already committed another proposal.

use chrono::{DateTime, Utc};
use domain::agent::proposal::ProposalState;
use domain::directory::PrincipalRef;
use sqlx::PgPool;
use uuid::Uuid;

/// A proposal as the agent tools read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct ProposalRow {
    /// The proposal.
    pub id: Uuid,
    /// Its room.
    pub chatroom_id: Uuid,
    /// The task.
    pub task_id: Uuid,
    /// The exact version.
    pub task_version_id: Uuid,
    /// The staged inputs file.
    pub input_key: String,
    /// Its digest.
    pub input_digest: String,
    /// The run's timeout.
    pub timeout_seconds: i64,
    /// One line for the human who confirms.
    pub summary: String,
    /// Whether the version itself requires confirmation.
    pub requires_confirmation: bool,
    /// Its state.
    pub state: ProposalState,
    /// Prepared.
    pub created_at: DateTime<Utc>,
    /// Committable until.
    pub expires_at: DateTime<Utc>,
}

const COLUMNS: &str = "id, chatroom_id, task_id, task_version_id, input_key, input_digest,
    timeout_seconds, summary, requires_confirmation, state, created_at, expires_at";

/// A proposal of the principal (`None` for anyone else's).
pub async fn proposal(
    pool: &PgPool,
    company: Uuid,
    principal: PrincipalRef,
    id: Uuid,
) -> sqlx::Result<Option<ProposalRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM agent_proposals
          WHERE id = $1 AND company_id = $2 AND principal_kind = $3 AND principal_id = $4"
    ))
    .bind(id)
    .bind(company)
    .bind(principal.kind)
    .bind(principal.id)
    .fetch_optional(pool)
    .await
}

/// The principal's prepared proposals that have not expired at `now`, newest first.
pub async fn pending(
    pool: &PgPool,
    company: Uuid,
    principal: PrincipalRef,
    now: DateTime<Utc>,
) -> sqlx::Result<Vec<ProposalRow>> {
    sqlx::query_as(&format!(
        "SELECT {COLUMNS} FROM agent_proposals
          WHERE company_id = $1 AND principal_kind = $2 AND principal_id = $3
            AND state = 'prepared' AND expires_at > $4
          ORDER BY created_at DESC, id"
    ))
    .bind(company)
    .bind(principal.kind)
    .bind(principal.id)
    .bind(now)
    .fetch_all(pool)
    .await
}

/// Whether the principal's turn (a room's message) began committing a proposal
/// other than `proposal`.
pub async fn turn_committed_another(
    pool: &PgPool,
    principal: PrincipalRef,
    chatroom: Uuid,
    message_seq: i64,
    proposal: Uuid,
) -> sqlx::Result<bool> {
    sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM agent_proposals
          WHERE chatroom_id = $1 AND commit_message_seq = $2 AND id <> $3
            AND principal_kind = $4 AND principal_id = $5)",
    )
    .bind(chatroom)
    .bind(message_seq)
    .bind(proposal)
    .bind(principal.kind)
    .bind(principal.id)
    .fetch_one(pool)
    .await
}

/// Prepared proposals whose time ran out before `now`: (id, company), at most
/// `limit`.
pub async fn expired(
    pool: &PgPool,
    now: DateTime<Utc>,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, Uuid)>> {
    sqlx::query_as(
        "SELECT id, company_id FROM agent_proposals
          WHERE state = 'prepared' AND expires_at <= $1 ORDER BY expires_at LIMIT $2",
    )
    .bind(now)
    .bind(limit)
    .fetch_all(pool)
    .await
}

/// Commits that began before `before` and never ended (their request stopped
/// between starting and finishing): (id, company, run id), at most `limit`.
pub async fn stalled_commits(
    pool: &PgPool,
    before: DateTime<Utc>,
    limit: i64,
) -> sqlx::Result<Vec<(Uuid, Uuid, Uuid)>> {
    sqlx::query_as(
        "SELECT id, company_id, run_id FROM agent_proposals
          WHERE state = 'committing' AND run_id IS NOT NULL AND updated_at < $1
          ORDER BY updated_at LIMIT $2",
    )
    .bind(before)
    .bind(limit)
    .fetch_all(pool)
    .await
}
