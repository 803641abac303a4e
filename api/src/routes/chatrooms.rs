//! Room settings of the chat platform that the sandbox reads ([docs/agent-tools.md]):
//! a room's jobs list, which decides whether the agent's sandbox tools load in it
//! (`PATCH /private/chatrooms/setting/jobs/{chatroom_id}`), and the rooms that carry
//! the `sandbox` job (`GET /private/chatrooms/by_job/sandbox` and its
//! `/numOfData` count).

use crate::access::{INSUFFICIENT, Room};
use crate::error::{ApiError, ApiResult};
use crate::extract::{ApiJson, ApiPath, ApiQuery, double_option};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::directory::chatroom::{Chatroom, ChatroomCommand};
use domain::validation::ViolationKind;
use projections::read_models::directory::jobs::{
    self, RoomJobs, RoomWithJobRow, RoomsWithJob, SANDBOX_JOB,
};
use projections::read_models::directory::query as directory;
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The most jobs a room's list holds.
pub const MAX_JOBS: usize = 32;
/// The longest job name.
pub const MAX_JOB_NAME: usize = 64;

/// The chatroom routes (absolute paths; the caller adds authentication).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(set_jobs))
        .routes(routes!(rooms_with_sandbox))
        .routes(routes!(count_rooms_with_sandbox))
}

/// `PATCH .../setting/jobs/{chatroom_id}`: the room's jobs list; `null` restores
/// auto-detection.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ChatroomJobsRequest {
    /// Job names (lowercase letters, digits, `_` and `-`, starting with a letter; up
    /// to 32 names of up to 64 characters), or `null` for auto-detection.
    #[serde(default, deserialize_with = "double_option")]
    #[schema(value_type = Option<Vec<String>>, required = true)]
    pub jobs: Option<Option<Vec<String>>>,
}

/// A room's jobs.
#[derive(Debug, Serialize, ToSchema)]
pub struct ChatroomJobsResponse {
    /// The room.
    pub chatroom_id: Uuid,
    /// The list a manager set, or `null` when the jobs are auto-detected.
    pub jobs: Option<Vec<String>>,
    /// The jobs the room carries now (auto-detection: `sandbox` while a task is
    /// enabled in the room).
    pub effective_jobs: Vec<String>,
    /// Whether `effective_jobs` is auto-detected.
    pub auto_detected: bool,
}

impl From<RoomJobs> for ChatroomJobsResponse {
    fn from(row: RoomJobs) -> Self {
        Self {
            chatroom_id: row.chatroom_id,
            auto_detected: row.jobs.is_none(),
            jobs: row.jobs,
            effective_jobs: row.effective_jobs,
        }
    }
}

/// The query of the rooms-by-job routes.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
#[serde(deny_unknown_fields)]
pub struct RoomsByJobQuery {
    /// The department's rooms the caller can see; absent: the rooms the caller
    /// joined.
    pub department_id: Option<Uuid>,
    /// Rooms to skip (default 0).
    pub offset: Option<i64>,
    /// Rooms per page, 1..100 (default 100).
    pub limit: Option<i64>,
    /// `asc` (default) or `desc`, by room name; favourites always come first.
    #[param(inline)]
    pub order: Option<SortOrder>,
}

/// The order of a room listing.
#[derive(Debug, Clone, Copy, Default, Deserialize, ToSchema)]
#[serde(rename_all = "lowercase")]
pub enum SortOrder {
    /// By name, A to Z.
    #[default]
    Asc,
    /// By name, Z to A.
    Desc,
}

/// A room carrying the job.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoomByJobItem {
    /// The room.
    pub chatroom_id: Uuid,
    /// Its name.
    pub name: String,
    /// Its department.
    pub department_id: Option<Uuid>,
    /// Whether the caller keeps it among its favourites.
    pub favourite: bool,
    /// The list a manager set, or `null` (auto-detected).
    pub jobs: Option<Vec<String>>,
    /// The jobs it carries.
    pub effective_jobs: Vec<String>,
}

impl From<RoomWithJobRow> for RoomByJobItem {
    fn from(row: RoomWithJobRow) -> Self {
        Self {
            chatroom_id: row.chatroom_id,
            name: row.name,
            department_id: row.department_id,
            favourite: row.favourite,
            jobs: row.jobs,
            effective_jobs: row.effective_jobs,
        }
    }
}

/// A page of rooms carrying the job.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoomByJobListResponse {
    /// The rooms, favourites first.
    pub items: Vec<RoomByJobItem>,
    /// The offset of the first item.
    pub offset: i64,
    /// The page size asked for.
    pub limit: i64,
}

/// How many rooms carry the job.
#[derive(Debug, Serialize, ToSchema)]
pub struct RoomByJobCountResponse {
    /// The number of rooms the listing pages through.
    pub total: i64,
}

/// The validated jobs list: names well formed and few enough (repeats are
/// dropped by the chatroom aggregate).
fn checked_jobs(jobs: Option<Vec<String>>) -> ApiResult<Option<Vec<String>>> {
    let Some(list) = jobs else { return Ok(None) };
    if list.len() > MAX_JOBS {
        return Err(ApiError::invalid(
            &["body", "jobs"],
            ViolationKind::TooLong(MAX_JOBS),
            None,
        ));
    }
    for (i, job) in list.iter().enumerate() {
        let well_formed = job.len() <= MAX_JOB_NAME
            && job.starts_with(|c: char| c.is_ascii_lowercase())
            && job
                .chars()
                .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-');
        if !well_formed {
            return Err(ApiError::invalid(
                &["body", "jobs", &i.to_string()],
                ViolationKind::Rule {
                    kind: "string_pattern_mismatch",
                    message: "a job name is a lowercase letter followed by up to 63 lowercase \
                              letters, digits, `_` or `-`"
                        .into(),
                },
                Some(job.clone().into()),
            ));
        }
    }
    Ok(Some(list))
}

/// Sets a room's jobs list (the chatroom manager ladder; a member or another
/// department's manager is refused with 403).
#[utoipa::path(patch, path = "/private/chatrooms/setting/jobs/{chatroom_id}", tag = "chatrooms",
    params(("chatroom_id" = Uuid, Path)), request_body = ChatroomJobsRequest,
    responses((status = 200, body = ChatroomJobsResponse)))]
async fn set_jobs(
    caller: Caller,
    ApiPath(chatroom_id): ApiPath<Uuid>,
    ApiJson(body): ApiJson<ChatroomJobsRequest>,
) -> ApiResult<Json<ChatroomJobsResponse>> {
    let room = Room::standing(&caller, chatroom_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    if !room.manager {
        return Err(ApiError::Forbidden(INSUFFICIENT));
    }
    let Some(jobs) = body.jobs else {
        return Err(ApiError::invalid(
            &["body", "jobs"],
            ViolationKind::Missing,
            None,
        ));
    };
    let jobs = checked_jobs(jobs)?;
    caller
        .command::<Chatroom>(chatroom_id, ChatroomCommand::SetJobs { jobs })
        .await?;
    let company = caller.principal.company_id;
    let row = jobs::room_jobs(caller.pool(), company, chatroom_id)
        .await?
        .ok_or(ApiError::NotFound)?;
    Ok(Json(row.into()))
}

/// The listing's filter, after checking that a named department is the caller's
/// company's (404 otherwise).
async fn listing<'a>(caller: &'a Caller, query: &RoomsByJobQuery) -> ApiResult<RoomsWithJob<'a>> {
    if let Some(department) = query.department_id {
        let company = caller.principal.company_id;
        if !directory::department_in_company(caller.pool(), company, department).await? {
            return Err(ApiError::NotFound);
        }
    }
    Ok(RoomsWithJob {
        principal: &caller.principal,
        job: SANDBOX_JOB,
        department: query.department_id,
    })
}

/// The rooms carrying the `sandbox` job: the caller's joined rooms, or a
/// department's rooms the caller can see; favourites first.
#[utoipa::path(get, path = "/private/chatrooms/by_job/sandbox", tag = "chatrooms",
    params(RoomsByJobQuery),
    responses((status = 200, body = RoomByJobListResponse)))]
async fn rooms_with_sandbox(
    caller: Caller,
    ApiQuery(query): ApiQuery<RoomsByJobQuery>,
) -> ApiResult<Json<RoomByJobListResponse>> {
    let offset = query.offset.unwrap_or(0);
    if offset < 0 {
        let kind = ViolationKind::GreaterThanEqual(0);
        return Err(ApiError::invalid(
            &["query", "offset"],
            kind,
            Some(offset.into()),
        ));
    }
    let limit = query.limit.unwrap_or(100);
    if !(1..=100).contains(&limit) {
        let kind = if limit < 1 {
            ViolationKind::GreaterThanEqual(1)
        } else {
            ViolationKind::LessThanEqual(100)
        };
        return Err(ApiError::invalid(
            &["query", "limit"],
            kind,
            Some(limit.into()),
        ));
    }
    let descending = matches!(query.order.unwrap_or_default(), SortOrder::Desc);
    let of = listing(&caller, &query).await?;
    let rows = jobs::rooms_with_job(caller.pool(), of, descending, offset, limit).await?;
    Ok(Json(RoomByJobListResponse {
        items: rows.into_iter().map(Into::into).collect(),
        offset,
        limit,
    }))
}

/// How many rooms `GET .../by_job/sandbox` pages through (`offset`, `limit` and
/// `order` are accepted and do not change the count).
#[utoipa::path(get, path = "/private/chatrooms/by_job/sandbox/numOfData", tag = "chatrooms",
    params(RoomsByJobQuery),
    responses((status = 200, body = RoomByJobCountResponse)))]
async fn count_rooms_with_sandbox(
    caller: Caller,
    ApiQuery(query): ApiQuery<RoomsByJobQuery>,
) -> ApiResult<Json<RoomByJobCountResponse>> {
    let of = listing(&caller, &query).await?;
    let total = jobs::count_rooms_with_job(caller.pool(), of).await?;
    Ok(Json(RoomByJobCountResponse { total }))
}
