//! Review processes of held callback writes: `GET /processes` lists the pending
//! ones the caller may decide, `POST /processes/{process_id}/approve` passes the
//! open gates the caller's groups decide (the last one applies the write, through
//! the table write path as the token's minting moderator, re-checking the columns
//! and permissions as they stand then), `POST /processes/{process_id}/reject`
//! drops the write. Another company's process is the uniform 404; a caller in none
//! of its gates' groups is 403; a decided one is 409 `staged_change_not_pending`.
//! Decisions on one process take turns (a lock per staged change), each reading
//! the change from the log.

use crate::access::INSUFFICIENT;
use crate::admission::{self, AdmissionLock};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiPath;
use crate::extract::OptionalJson;
use crate::request::Caller;
use crate::routes::tables::callback::{Author, apply, open_as};
use crate::routes::tables::gates::Operation;
use crate::state::AppState;
use axum::Json;
use chrono::{DateTime, Utc};
use domain::error::Code;
use domain::principal::PrincipalType;
use domain::tables::callback_delivery::CallbackOp;
use domain::tables::staged_change::{ChangeStatus, StagedChange, StagedChangeCommand};
use projections::read_models::review::query::{self as review, ChangeRow};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The process routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(list_processes))
        .routes(routes!(approve))
        .routes(routes!(reject))
}

/// One gate of a process.
#[derive(Debug, Serialize, ToSchema)]
pub struct GateState {
    /// The gate's name.
    pub name: String,
    /// The group that decides it.
    pub group_id: Uuid,
    /// Whether it passed.
    pub passed: bool,
}

/// A review process of a held callback write.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProcessResponse {
    /// The process.
    pub process_id: Uuid,
    /// The held write.
    pub staged_change_id: Uuid,
    /// `pending`, `applied` or `rejected`.
    pub status: String,
    /// The table.
    pub table_id: Uuid,
    /// `create` or `update`.
    pub op: String,
    /// The record it updates, or the id the created record takes.
    pub record_id: Uuid,
    /// The cells as sent.
    #[schema(value_type = Object)]
    pub data: Map<String, Value>,
    /// The rule that held it.
    pub rule_id: String,
    /// The rule's label.
    pub rule_label: String,
    /// The review template.
    pub template_id: Uuid,
    /// Its gates.
    pub gates: Vec<GateState>,
    /// Whether approvals carry a signature.
    pub require_signature: bool,
    /// The reviewer who decided last.
    pub decided_by: Option<String>,
    /// Why it was rejected.
    pub reason: Option<String>,
    /// When it was held.
    pub created_at: DateTime<Utc>,
    /// When it last changed.
    pub updated_at: DateTime<Utc>,
}

impl From<ChangeRow> for ProcessResponse {
    fn from(r: ChangeRow) -> Self {
        let gates = r
            .gates
            .0
            .iter()
            .enumerate()
            .map(|(i, g)| GateState {
                name: g.name.clone(),
                group_id: g.condition.group_id,
                passed: r.passed.contains(&(i as i32)),
            })
            .collect();
        Self {
            process_id: r.process_id,
            staged_change_id: r.id,
            status: r.status,
            table_id: r.table_id,
            op: r.op,
            record_id: r.record_id,
            data: r.data.0,
            rule_id: r.rule_id,
            rule_label: r.rule_label,
            template_id: r.template_id,
            gates,
            require_signature: r.require_signature,
            decided_by: r.decided_by,
            reason: r.reason,
            created_at: r.created_at,
            updated_at: r.updated_at,
        }
    }
}

/// The processes a caller may decide.
#[derive(Debug, Serialize, ToSchema)]
pub struct ProcessListResponse {
    /// Pending, oldest first.
    pub processes: Vec<ProcessResponse>,
}

/// An approval.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Approval {
    /// The reviewer's signature (required when the template asks for one).
    pub signature: Option<String>,
}

/// A rejection.
#[derive(Debug, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Rejection {
    /// Why.
    pub reason: Option<String>,
}

/// The review groups the caller belongs to (only users review).
async fn my_groups(caller: &Caller) -> ApiResult<Vec<Uuid>> {
    if caller.principal.principal_type != PrincipalType::User {
        return Ok(Vec::new());
    }
    let company = caller.principal.company_id;
    Ok(review::groups_of_user(caller.pool(), company, caller.principal.principal_id).await?)
}

/// A process of the caller's company that the caller decides, locked against
/// every other decision on it until it drops (two reviewers deciding at once take
/// turns, each seeing the other's decision).
struct Decision {
    change: ChangeRow,
    /// The staged change as the log has it now.
    state: StagedChange,
    /// The gates (by position) the caller's groups decide, passed or not.
    gates: Vec<usize>,
    _lock: AdmissionLock,
}

impl Decision {
    /// The caller's gates still open.
    fn open(&self) -> Vec<usize> {
        let open = self.state.open_gates();
        self.gates
            .iter()
            .copied()
            .filter(|g| open.contains(g))
            .collect()
    }
}

async fn decidable(caller: &Caller, process_id: Uuid) -> ApiResult<Decision> {
    let company = caller.principal.company_id;
    let change = review::change_by_process(caller.pool(), company, process_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    let groups = my_groups(caller).await?;
    let gates: Vec<usize> = change
        .gates
        .0
        .iter()
        .enumerate()
        .filter(|(_, g)| groups.contains(&g.condition.group_id))
        .map(|(i, _)| i)
        .collect();
    if gates.is_empty() {
        return Err(ApiError::Forbidden(INSUFFICIENT));
    }
    let purpose = format!("staged-change/{}", change.id);
    let lock = admission::lock(caller.pool(), company, &purpose).await?;
    let state = caller
        .state
        .bus
        .load::<StagedChange>(&change.id.to_string())
        .await?;
    if state.status != ChangeStatus::Pending {
        return Err(ApiError::code(
            Code::StagedChangeNotPending,
            format!("the change was already {}", state.status.as_str()),
        ));
    }
    Ok(Decision {
        change,
        state,
        gates,
        _lock: lock,
    })
}

/// Applies a held write as its author, the token's minting moderator or the
/// Command's actor (a creation that applied before, without its approval being
/// recorded, is not created again).
async fn apply_held(caller: &Caller, change: &ChangeRow) -> ApiResult<()> {
    let op = if change.op == CallbackOp::Update.as_str() {
        CallbackOp::Update
    } else {
        CallbackOp::Create
    };
    let operation = match op {
        CallbackOp::Create => Operation::InsertRows,
        CallbackOp::Update => Operation::EditRows,
    };
    let author = Author {
        company_id: change.company_id,
        table_id: change.table_id,
        user: &change.author,
        method: if change.source == "command" {
            domain::principal::AuthMethod::Command
        } else {
            domain::principal::AuthMethod::CallbackToken
        },
    };
    let table = open_as(&caller.state, caller.ctx.clone(), author, operation).await?;
    if op == CallbackOp::Create
        && !table
            .handle()
            .existing(caller.pool(), &[change.record_id])
            .await
            .map_err(ApiError::internal)?
            .is_empty()
    {
        return Ok(());
    }
    apply(&table, op, change.record_id, &change.data.0).await
}

async fn answer(caller: &Caller, id: Uuid) -> ApiResult<Json<ProcessResponse>> {
    let row = review::change(caller.pool(), id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(row.into()))
}

/// The pending processes whose gates name a group of the caller.
#[utoipa::path(get, path = "/processes", tag = "review",
    responses((status = 200, body = ProcessListResponse)))]
async fn list_processes(caller: Caller) -> ApiResult<Json<ProcessListResponse>> {
    let groups = my_groups(&caller).await?;
    let rows =
        review::pending_for_groups(caller.pool(), caller.principal.company_id, &groups).await?;
    Ok(Json(ProcessListResponse {
        processes: rows.into_iter().map(ProcessResponse::from).collect(),
    }))
}

/// Passes the open gates the caller's groups decide; when none is left open, the
/// held write applies (its refusal answers as the write would, and nothing is
/// recorded).
#[utoipa::path(post, path = "/processes/{process_id}/approve", tag = "review", request_body = Approval,
    params(("process_id" = Uuid, Path, description = "The review process")),
    responses((status = 200, body = ProcessResponse)))]
async fn approve(
    caller: Caller,
    ApiPath(process_id): ApiPath<Uuid>,
    OptionalJson(body): OptionalJson<Approval>,
) -> ApiResult<Json<ProcessResponse>> {
    let decision = decidable(&caller, process_id).await?;
    let mine = decision.open();
    if mine.is_empty() {
        return Err(ApiError::Forbidden(INSUFFICIENT));
    }
    let change = &decision.change;
    let signature = body.signature.filter(|s| !s.trim().is_empty());
    if change.require_signature && signature.is_none() {
        return Err(ApiError::code(
            Code::ReviewSignatureRequired,
            "this review template asks every approval for a signature",
        ));
    }
    let applied = mine.len() == decision.state.open_gates().len();
    if applied {
        apply_held(&caller, change).await?;
    }
    let command = StagedChangeCommand::Approve {
        by: caller.principal.reference(),
        gates: mine,
        signature,
        applied,
    };
    caller.command::<StagedChange>(change.id, command).await?;
    answer(&caller, change.id).await
}

/// Drops the held write (any member of one of its gates' groups).
#[utoipa::path(post, path = "/processes/{process_id}/reject", tag = "review", request_body = Rejection,
    params(("process_id" = Uuid, Path, description = "The review process")),
    responses((status = 200, body = ProcessResponse)))]
async fn reject(
    caller: Caller,
    ApiPath(process_id): ApiPath<Uuid>,
    OptionalJson(body): OptionalJson<Rejection>,
) -> ApiResult<Json<ProcessResponse>> {
    let decision = decidable(&caller, process_id).await?;
    let change = &decision.change;
    let command = StagedChangeCommand::Reject {
        by: caller.principal.reference(),
        reason: body.reason,
    };
    caller.command::<StagedChange>(change.id, command).await?;
    answer(&caller, change.id).await
}
