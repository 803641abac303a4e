//! The output credential of a run whose task version has an output policy (spec
//! `sandbox-service.md` section 2, "Output policy"): a callback token bound to the
//! run, acting as the run's submitter, living for the run's timeout plus 120
//! seconds and revoked when the run ends. For `custom_table_writeback` it writes
//! the policy's table with the policy's operations through the table callback
//! route; for `custom_table_command` it runs the policy's Command (at the version
//! current when the run started) through the command-output route. The work script finds
//! its URL and secret in `SERVICE_CT_WRITEBACK_URL` and `SERVICE_CT_WRITEBACK_TOKEN`;
//! the log keeps only the secret's hash.

use crate::capability::{random_secret, random_token_id};
use crate::runtime::Runtime;
use anyhow::Context;
use chrono::{Duration, Utc};
use domain::principal::EventMetadata;
use domain::tables::callback_token::{
    AllowedOps, CALLBACK_PREFIX, CallbackToken, CallbackTokenCommand, CallbackTokenTerms,
    CommandGrant,
};
use domain::tasks::contents::{OutputPolicy, WritebackOps};
use projections::read_models::table_commands::query as commands;
use uuid::Uuid;
use zeroize::Zeroizing;

/// Seconds a credential outlives the run's timeout (spec: `timeout_seconds` + 120).
pub(super) const GRACE_SECONDS: i64 = 120;

/// What a run's writeback needs from its facts.
pub(super) struct Grant<'a> {
    /// The run.
    pub run_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// The submitter (`user:<id>`), whom the credential's writes act as.
    pub submitter: String,
    /// The run's timeout.
    pub timeout_seconds: i64,
    /// The version's output policy.
    pub policy: Option<&'a OutputPolicy>,
}

/// A minted credential: its id and its secret (which lives only here and in the
/// run's environment).
pub(super) struct Credential {
    /// The callback token id.
    pub token_id: Uuid,
    /// The table it writes.
    pub table_id: Uuid,
    /// Where the work script sends its writes (the path below this service).
    pub path: String,
    /// The secret.
    pub secret: Zeroizing<String>,
}

/// Mints the run's credential when its version has an output policy: a
/// writeback credential for the policy's table, or a command-output credential
/// for the policy's Command at its current version.
pub(super) async fn mint(
    state: &Runtime,
    grant: Grant<'_>,
    metadata: &EventMetadata,
) -> anyhow::Result<Option<Credential>> {
    let (table_id, allowed_ops, command) = match grant.policy {
        None => return Ok(None),
        Some(OutputPolicy::CustomTableWriteback {
            table_id,
            allowed_ops,
        }) => (*table_id, *allowed_ops, None),
        Some(OutputPolicy::CustomTableCommand { command_id, .. }) => {
            let command = commands::command(&state.pool, grant.company_id, *command_id)
                .await?
                .context("the output policy's Command no longer exists")?;
            let binding = CommandGrant {
                command_id: command.id,
                version: command.version,
            };
            (command.table_id, WritebackOps::Create, Some(binding))
        }
    };
    let (secret, secret_sha256) = random_secret();
    let token_id = random_token_id();
    let path = match command {
        Some(_) => format!("{CALLBACK_PREFIX}/command-output/{token_id}"),
        None => format!("{CALLBACK_PREFIX}/{token_id}"),
    };
    let terms = CallbackTokenTerms {
        token_id,
        company_id: grant.company_id,
        table_id,
        name: format!("output of run {}", grant.run_id),
        allowed_ops: match allowed_ops {
            WritebackOps::Create => AllowedOps::Create,
            WritebackOps::CreateUpdate => AllowedOps::CreateUpdate,
        },
        secret_sha256,
        valid_until: Some(Utc::now() + Duration::seconds(grant.timeout_seconds + GRACE_SECONDS)),
        created_by: grant.submitter,
        run_id: Some(grant.run_id),
        command,
    };
    state
        .bus
        .record::<CallbackToken>(
            &token_id.to_string(),
            CallbackTokenCommand::Mint(Box::new(terms)),
            metadata,
        )
        .await
        .map_err(|e| anyhow::anyhow!("the writeback credential was not minted: {e}"))?;
    Ok(Some(Credential {
        token_id,
        table_id,
        path,
        secret: Zeroizing::new(secret),
    }))
}

/// Revokes the run's credential (at its end, however it ended; one left behind by
/// a crash expires on its own).
pub(super) async fn revoke(
    state: &Runtime,
    credential: &Credential,
    metadata: &EventMetadata,
) -> anyhow::Result<()> {
    let command = CallbackTokenCommand::Revoke {
        table_id: credential.table_id,
    };
    state
        .bus
        .record::<CallbackToken>(&credential.token_id.to_string(), command, metadata)
        .await
        .map_err(|e| anyhow::anyhow!("the writeback credential was not revoked: {e}"))?;
    Ok(())
}
