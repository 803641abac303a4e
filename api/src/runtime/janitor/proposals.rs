//! Agent proposals the janitor settles: prepared proposals past their 1800 s are
//! recorded `expired`; a commit that began more than [`STALLED_AFTER`] ago and never
//! ended (its request stopped in between) completes when its run exists and is
//! abandoned otherwise, so the proposal is committable again.

use super::metadata;
use crate::runtime::Runtime;
use chrono::{DateTime, Utc};
use domain::agent::proposal::{AgentProposal, ProposalCommand};
use domain::runs::run::Run;
use projections::read_models::agent_proposals::query as proposals;

/// How long a commit may take before the janitor settles it.
pub const STALLED_AFTER: chrono::Duration = chrono::Duration::seconds(120);

/// Proposals settled per sweep, per kind.
const BATCH: i64 = 500;

/// Records expiries and settles stalled commits.
pub async fn settle(state: &Runtime, now: DateTime<Utc>) -> anyhow::Result<()> {
    for (id, company) in proposals::expired(&state.pool, now, BATCH).await? {
        let command = ProposalCommand::Expire { now };
        let meta = metadata(company, id, now);
        state
            .bus
            .record::<AgentProposal>(&id.to_string(), command, &meta)
            .await?;
    }
    let stalled = proposals::stalled_commits(&state.pool, now - STALLED_AFTER, BATCH).await?;
    for (id, company, run_id) in stalled {
        // The log, not the read models: they may not show a run committed just now.
        let run = state.bus.load::<Run>(&run_id.to_string()).await?;
        let command = if run.submitted.is_some() {
            ProposalCommand::CompleteCommit
        } else {
            ProposalCommand::AbandonCommit {
                failed: false,
                error: "retryable".into(),
            }
        };
        let meta = metadata(company, id, now);
        state
            .bus
            .record::<AgentProposal>(&id.to_string(), command, &meta)
            .await?;
    }
    Ok(())
}
