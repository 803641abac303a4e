//! The checks of a task version's output policy (spec `sandbox-service.md`
//! section 2 "Output policy" and the `output_policy_*` rows of section 7), at each
//! step that names them: a draft is checked for what it names (422), a publish for
//! whether its target still takes writes and the publisher may make them (409,
//! 403), a submission for whether the submitter may receive the run's writeback
//! credential (409, 403).

use crate::access::Task;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use crate::routes::tables::gates::Operation;
use crate::routes::tables::scope::{Mount, OpenTable, open_table_id};
use crate::state::AppState;
use domain::environments::environment::OwnerScope;
use domain::error::Code;
use domain::principal::{AuthMethod, PrincipalType};
use domain::tables::command::{Authority, CommandKind};
use domain::tables::grants::EditMode;
use domain::tasks::contents::{OutputPolicy, VersionContents, WritebackOps};
use projections::read_models::table_commands::query::{self as commands, CommandRow};
use projections::read_models::tables::query::{self as tables, TableRow};
use serde_json::Value;
use uuid::Uuid;

/// A draft's policy must name a live table of the company that neither a channel
/// rule nor the commands-only setting governs, or a live write Command whose
/// inputs equal the policy's `input_schema`.
pub async fn check_draft(state: &AppState, company: Uuid, policy: &OutputPolicy) -> ApiResult<()> {
    match policy {
        OutputPolicy::CustomTableWriteback { table_id, .. } => {
            let Some(table) = tables::table(&state.pool, company, *table_id).await? else {
                return Err(ApiError::code(
                    Code::OutputPolicyTableNotFound,
                    "no custom table with that id in this company",
                ));
            };
            if table.channel_scope_column.is_some() {
                return Err(ApiError::code(
                    Code::OutputPolicyChannelTable,
                    "the table is governed by a scoped channel policy; a run has no room to write from",
                ));
            }
            if table.agent_writes_via_commands_only {
                return Err(ApiError::code(
                    Code::OutputPolicyGovernedTable,
                    "the table takes agent writes through its Commands only",
                ));
            }
            Ok(())
        }
        OutputPolicy::CustomTableCommand {
            command_id,
            input_schema,
            ..
        } => live_command(state, company, *command_id, input_schema)
            .await
            .map(|_| ()),
    }
}

/// The live write Command a Command-output policy names, whose inputs equal the
/// policy's `input_schema` (422 `output_policy_command_not_found` or
/// `output_policy_schema_mismatch`).
async fn live_command(
    state: &AppState,
    company: Uuid,
    command_id: Uuid,
    input_schema: &Value,
) -> ApiResult<CommandRow> {
    let command = commands::command(&state.pool, company, command_id)
        .await?
        .filter(|c| c.definition.kind == CommandKind::Write)
        .ok_or_else(|| {
            ApiError::code(
                Code::OutputPolicyCommandNotFound,
                "no live write Command with that id in this company",
            )
        })?;
    if &command.definition.inputs != input_schema {
        return Err(ApiError::code(
            Code::OutputPolicySchemaMismatch,
            "input_schema differs from the Command's inputs",
        ));
    }
    Ok(command)
}

/// A Command-output policy's Command must be a restricted definition-authority
/// Command (its writes carry it as their effect identity), and `caller` must read
/// its table's rows; else 403 `output_policy_author_denied`.
async fn check_command_authority(caller: &Caller, command: &CommandRow) -> ApiResult<()> {
    let denied = || {
        ApiError::code(
            Code::OutputPolicyAuthorDenied,
            "the Command is not a definition-authority Command whose table the author reads",
        )
    };
    if command.definition.authority != Authority::Definition {
        return Err(denied());
    }
    let company = caller.principal.company_id;
    let table = tables::table(caller.pool(), company, command.table_id)
        .await?
        .ok_or_else(denied)?;
    let mount = Mount::owning(&table);
    match open_table_id(caller, &mount, table.id, Operation::ReadRows).await {
        Ok(_) => Ok(()),
        Err(
            ApiError::NotFound
            | ApiError::Missing(_)
            | ApiError::Forbidden(_)
            | ApiError::Refused(_),
        ) => Err(denied()),
        Err(other) => Err(other),
    }
}

/// At publish: only a department-owned task may carry a policy, its table must
/// still take writes, and the publisher must be able to make every write the
/// policy allows on any record (no row restriction).
pub async fn check_publish(
    caller: &Caller,
    task: &Task,
    contents: &VersionContents,
) -> ApiResult<()> {
    let Some(policy) = &contents.output_policy else {
        return Ok(());
    };
    if task.row.task.owner_scope != OwnerScope::Department {
        return Err(ApiError::code(
            Code::OutputPolicyOwnerScopeUnsupported,
            "only department-owned tasks may publish an output policy",
        ));
    }
    let (table_id, allowed_ops) = match policy {
        OutputPolicy::CustomTableWriteback {
            table_id,
            allowed_ops,
        } => (table_id, allowed_ops),
        OutputPolicy::CustomTableCommand {
            command_id,
            input_schema,
            ..
        } => {
            let company = caller.principal.company_id;
            let command = live_command(&caller.state, company, *command_id, input_schema)
                .await
                .map_err(|_| unsatisfiable("the output policy's Command is gone or changed"))?;
            return check_command_authority(caller, &command).await;
        }
    };
    let table = writable_table(caller, *table_id).await?;
    let unrestricted = opened(caller, &table).await?.is_some_and(|open| {
        open.is_moderator()
            || (open.access.insert
                && open.access.row_filter.is_none()
                && (*allowed_ops == WritebackOps::Create || open.access.edit_mode == EditMode::All))
    });
    if unrestricted {
        Ok(())
    } else {
        Err(ApiError::code(
            Code::OutputPolicyAuthorDenied,
            "the publisher lacks unrestricted write on the output policy's table",
        ))
    }
}

/// At submission (a new run, not a replay): a writeback version's table must still
/// take writes and the submitter must be a user who may make the policy's writes,
/// since the run's credential acts as the submitter. A Command-output version's
/// Command is checked again, and only the permitted way submits it (rule 8: a
/// person signed in with a session, in the policy's room; never an API key, a
/// restricted key or a social media client).
pub async fn check_submission(
    caller: &Caller,
    room_id: Uuid,
    contents: &VersionContents,
) -> ApiResult<()> {
    let (table_id, allowed_ops) = match &contents.output_policy {
        None => return Ok(()),
        Some(OutputPolicy::CustomTableWriteback {
            table_id,
            allowed_ops,
        }) => (table_id, allowed_ops),
        Some(OutputPolicy::CustomTableCommand {
            command_id,
            chatroom_id,
            input_schema,
        }) => {
            let company = caller.principal.company_id;
            let command = live_command(&caller.state, company, *command_id, input_schema).await?;
            // Rule 8: only a person, signed in, in the policy's own room.
            let principal = &caller.principal;
            let permitted = principal.principal_type == PrincipalType::User
                && principal.auth_method == AuthMethod::Jwt
                && room_id == *chatroom_id;
            if !permitted {
                return Err(ApiError::code(
                    Code::OutputPolicyAuthorDenied,
                    "this task version runs only when a person submits it in the output policy's room",
                ));
            }
            return check_command_authority(caller, &command).await;
        }
    };
    let table = writable_table(caller, *table_id).await?;
    let user = caller.principal.principal_type == PrincipalType::User;
    let may_write = user
        && opened(caller, &table).await?.is_some_and(|open| {
            open.is_moderator()
                || (open.access.insert
                    && (*allowed_ops == WritebackOps::Create
                        || open.access.edit_mode != EditMode::None))
        });
    if may_write {
        Ok(())
    } else {
        Err(ApiError::code(
            Code::WritebackAuthorityDenied,
            "the submitter may not write the records this task version writes back",
        ))
    }
}

fn unsatisfiable(message: &str) -> ApiError {
    ApiError::code(Code::OutputPolicyUnsatisfiable, message)
}

/// The policy's table, while it exists and neither a channel rule nor the
/// commands-only setting governs it.
async fn writable_table(caller: &Caller, table_id: Uuid) -> ApiResult<TableRow> {
    let company = caller.principal.company_id;
    match tables::table(caller.pool(), company, table_id).await? {
        None => Err(unsatisfiable("the output policy's table no longer exists")),
        Some(table) if table.channel_scope_column.is_some() => Err(unsatisfiable(
            "the output policy's table is governed by a scoped channel policy",
        )),
        Some(table) if table.agent_writes_via_commands_only => Err(unsatisfiable(
            "the output policy's table takes agent writes through its Commands only",
        )),
        Some(table) => Ok(table),
    }
}

/// The table opened as the caller for creating records; `None` when the caller
/// may not (a refusal of the table's own ladder, which this step reports in its
/// own terms).
async fn opened(caller: &Caller, table: &TableRow) -> ApiResult<Option<OpenTable>> {
    match open_table_id(
        caller,
        &Mount::owning(table),
        table.id,
        Operation::InsertRows,
    )
    .await
    {
        Ok(open) => Ok(Some(open)),
        Err(
            ApiError::NotFound
            | ApiError::Missing(_)
            | ApiError::Forbidden(_)
            | ApiError::Refused(_),
        ) => Ok(None),
        Err(ApiError::Coded(coded)) if coded.status.as_u16() == 403 => Ok(None),
        Err(other) => Err(other),
    }
}
