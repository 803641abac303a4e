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
use domain::principal::PrincipalType;
use domain::tables::grants::EditMode;
use domain::tasks::contents::{OutputPolicy, VersionContents, WritebackOps};
use projections::read_models::tables::query::{self as tables, TableRow};
use uuid::Uuid;

/// A draft's policy must name a live table of the company that neither a channel
/// rule nor the commands-only setting governs; no Command exists yet, so a Command-output policy never resolves.
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
        OutputPolicy::CustomTableCommand { .. } => Err(ApiError::code(
            Code::OutputPolicyCommandNotFound,
            "no live Command with that id in this company",
        )),
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
    let OutputPolicy::CustomTableWriteback {
        table_id,
        allowed_ops,
    } = policy
    else {
        return Err(unsatisfiable("the output policy's Command does not exist"));
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
/// since the run's credential acts as the submitter.
pub async fn check_submission(caller: &Caller, contents: &VersionContents) -> ApiResult<()> {
    let Some(OutputPolicy::CustomTableWriteback {
        table_id,
        allowed_ops,
    }) = &contents.output_policy
    else {
        return Ok(());
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
        Err(ApiError::NotFound | ApiError::Forbidden(_) | ApiError::Refused(_)) => Ok(None),
        Err(ApiError::Coded(coded)) if coded.status.as_u16() == 403 => Ok(None),
        Err(other) => Err(other),
    }
}
