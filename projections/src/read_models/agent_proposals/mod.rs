//! The `agent_proposals` projection: every agent submission proposal with its
//! state, the run a commit created and the turn that committed it.

pub mod query;

use crate::log::StoredEvent;
use crate::projection::Projection;
use async_trait::async_trait;
use domain::agent::proposal::{AgentProposal, ProposalEvent, ProposalState};
use sqlx::PgConnection;
use uuid::Uuid;

/// Projects [`AgentProposal`].
pub struct AgentProposalsProjection;

#[async_trait]
impl Projection for AgentProposalsProjection {
    fn name(&self) -> &'static str {
        "agent_proposals"
    }

    fn tables(&self) -> &'static [&'static str] {
        &["agent_proposals"]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &["agent_proposal"]
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            let Some(decoded) = event.decode::<AgentProposal>()? else {
                continue;
            };
            let id: Uuid = event.aggregate_id.parse()?;
            match decoded {
                ProposalEvent::ProposalPrepared(terms) => {
                    sqlx::query(
                        "INSERT INTO agent_proposals (id, company_id, chatroom_id, principal_kind,
                                principal_id, task_id, task_version_id, input_key, input_bytes,
                                input_digest, timeout_seconds, origin_message_id,
                                origin_message_seq, summary, requires_confirmation, state,
                                created_at, expires_at, updated_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14,
                                 $15, $16, $17, $18, $17)
                         ON CONFLICT (id) DO NOTHING",
                    )
                    .bind(id)
                    .bind(terms.company_id)
                    .bind(terms.chatroom_id)
                    .bind(terms.principal.kind)
                    .bind(terms.principal.id)
                    .bind(terms.task_id)
                    .bind(terms.task_version_id)
                    .bind(&terms.input.key)
                    .bind(terms.input.byte_size)
                    .bind(&terms.input.digest)
                    .bind(terms.timeout_seconds)
                    .bind(&terms.origin.message_id)
                    .bind(terms.origin.message_seq)
                    .bind(&terms.summary)
                    .bind(terms.requires_confirmation)
                    .bind(ProposalState::Prepared)
                    .bind(event.time())
                    .bind(terms.expires_at)
                    .execute(&mut *conn)
                    .await?;
                }
                ProposalEvent::ProposalCommitStarted { run_id, turn } => {
                    sqlx::query(
                        "UPDATE agent_proposals SET state = $2, run_id = $3,
                                commit_message_seq = $4, updated_at = $5 WHERE id = $1",
                    )
                    .bind(id)
                    .bind(ProposalState::Committing)
                    .bind(run_id)
                    .bind(turn.message_seq)
                    .bind(event.time())
                    .execute(&mut *conn)
                    .await?;
                }
                ProposalEvent::ProposalCommitAbandoned { failed, error } => {
                    let state = if failed {
                        ProposalState::Failed
                    } else {
                        ProposalState::Prepared
                    };
                    sqlx::query(
                        "UPDATE agent_proposals SET state = $2, run_id = NULL,
                                commit_message_seq = NULL, last_error = $3, updated_at = $4
                          WHERE id = $1",
                    )
                    .bind(id)
                    .bind(state)
                    .bind(error)
                    .bind(event.time())
                    .execute(&mut *conn)
                    .await?;
                }
                ProposalEvent::ProposalCommitted { .. } => {
                    set_state(conn, id, ProposalState::Committed, event).await?
                }
                ProposalEvent::ProposalSuperseded { .. } => {
                    set_state(conn, id, ProposalState::Superseded, event).await?
                }
                ProposalEvent::ProposalCancelled => {
                    set_state(conn, id, ProposalState::Cancelled, event).await?
                }
                ProposalEvent::ProposalExpired => {
                    set_state(conn, id, ProposalState::Expired, event).await?
                }
            }
        }
        Ok(())
    }
}

async fn set_state(
    conn: &mut PgConnection,
    id: Uuid,
    state: ProposalState,
    event: &StoredEvent,
) -> anyhow::Result<()> {
    sqlx::query("UPDATE agent_proposals SET state = $2, updated_at = $3 WHERE id = $1")
        .bind(id)
        .bind(state)
        .bind(event.time())
        .execute(conn)
        .await?;
    Ok(())
}
