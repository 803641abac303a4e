//! Agent delivery reconciliation of write Commands ([`domain::tables::agent_delivery`]):
//! a social media client's keyed delivery is answered from its valid marker, or
//! runs and leaves one; a reconciliation keeps at most
//! [`RECONCILIATION_CAPACITY`] valid markers.

use super::run::{CommandExecution, Runner, answer_record, write};
use crate::error::ApiResult;
use crate::request::Caller;
use chrono::{Duration, Utc};
use domain::tables::agent_delivery::{
    AgentDelivery, DeliveryCommand, DeliveryMarker, RECONCILIATION_CAPACITY,
};
use projections::read_models::table_commands::query::{self as commands, CommandRow};
use serde_json::{Map, Value};
use uuid::Uuid;

/// Runs an agent's keyed delivery of a write Command, reconciled by its markers.
pub(super) async fn deliver(
    runner: &Runner<'_>,
    caller: &Caller,
    row: &CommandRow,
    inputs: &Map<String, Value>,
    key: &str,
) -> ApiResult<CommandExecution> {
    let agent = &caller.principal.reference();
    let now = Utc::now();
    let valid = commands::valid_markers(&runner.state.pool, row.id, agent, now).await?;
    if let Some(marker) = valid.iter().find(|m| m.key == key) {
        return answer_record(runner, row, marker.record_id, &marker.op, true).await;
    }
    let execution = write(runner, row, inputs, None).await?;
    let marker = DeliveryMarker {
        marker_id: Uuid::new_v4(),
        company_id: row.company_id,
        command_id: row.id,
        agent: agent.to_string(),
        key: key.to_string(),
        record_id: execution.record_id,
        op: execution.op.clone(),
        expires_at: now + Duration::seconds(row.definition.delivery_reconciliation_ttl_seconds),
    };
    let marker_id = marker.marker_id;
    caller
        .command::<AgentDelivery>(marker_id, DeliveryCommand::Mark(Box::new(marker)))
        .await?;
    let retired = (valid.len() + 1).saturating_sub(RECONCILIATION_CAPACITY);
    for old in valid.iter().take(retired) {
        let command = DeliveryCommand::Acknowledge {
            reason: "capacity".into(),
        };
        caller.command::<AgentDelivery>(old.id, command).await?;
    }
    Ok(execution)
}
