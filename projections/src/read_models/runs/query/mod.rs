//! Queries of the run read models: runs, their artifact files and public links, the
//! queues and the management histories.

use crate::read_models::page::Window;
use chrono::{DateTime, Utc};
use domain::principal::{AuthMethod, Principal, PrincipalType};
use domain::runs::run::{ContentState, RunStatus, SubmissionSource};
use sqlx::PgPool;

mod history;
mod objects;

use domain::secrets::resolve::SlotSources;
pub use history::*;
pub use objects::*;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// A run (`runs`), as the routes, the executor and the janitor read it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RunRow {
    /// Id.
    pub id: Uuid,
    /// Company.
    pub company_id: Uuid,
    /// Room.
    pub chatroom_id: Uuid,
    /// Task.
    pub task_id: Uuid,
    /// Version.
    pub task_version_id: Uuid,
    /// Submitter kind.
    pub principal_type: PrincipalType,
    /// Submitter.
    pub principal_id: Uuid,
    /// How it authenticated.
    pub auth_method: AuthMethod,
    /// The key that submitted it.
    pub api_key_id: Option<Uuid>,
    /// Where it came from.
    pub submission_source: SubmissionSource,
    /// Inputs file digest.
    pub input_digest: String,
    /// Inputs file key.
    pub input_key: String,
    /// Timeout.
    pub timeout_seconds: i64,
    /// Profile.
    pub resource_profile: String,
    /// Retried run.
    pub retry_of_run_id: Option<Uuid>,
    /// Status.
    pub status: RunStatus,
    /// Why it did not complete.
    pub error_code: Option<String>,
    /// Stored log.
    pub log_key: Option<String>,
    /// Stored output.
    pub output_key: Option<String>,
    /// Stored bundle.
    pub bundle_key: Option<String>,
    /// Whether its contents are still held.
    pub content_state: ContentState,
    /// Queued.
    pub queued_at: DateTime<Utc>,
    /// Started.
    pub started_at: Option<DateTime<Utc>>,
    /// Ended.
    pub terminal_at: Option<DateTime<Utc>>,
    /// The secret value versions pinned at submission, by slot.
    pub slot_sources: Option<sqlx::types::Json<SlotSources>>,
}

impl RunRow {
    /// Whether its contents are still held.
    pub fn content_active(&self) -> bool {
        self.content_state == ContentState::Active
    }
}

/// A run of the company in the room.
pub async fn run_in_room(
    pool: &PgPool,
    company: Uuid,
    room: Uuid,
    run: Uuid,
) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as("SELECT * FROM runs WHERE id = $1 AND chatroom_id = $2 AND company_id = $3")
        .bind(run)
        .bind(room)
        .bind(company)
        .fetch_optional(pool)
        .await
}

/// A run by id (after the caller's own command, or for a worker).
pub async fn run(pool: &PgPool, id: Uuid) -> sqlx::Result<Option<RunRow>> {
    sqlx::query_as("SELECT * FROM runs WHERE id = $1")
        .bind(id)
        .fetch_optional(pool)
        .await
}

/// Whether the run was submitted (a submission with its key was already admitted):
/// read from the log, so a submission the read models do not show yet counts.
pub async fn exists(pool: &PgPool, id: Uuid) -> sqlx::Result<bool> {
    Ok(existing(pool, &[id]).await?.contains(&id))
}

/// Which of these runs were submitted already ([`exists`] for a batch, in one
/// query).
pub async fn existing(pool: &PgPool, ids: &[Uuid]) -> sqlx::Result<HashSet<Uuid>> {
    let ids: Vec<String> = ids.iter().map(Uuid::to_string).collect();
    let found: Vec<String> = sqlx::query_scalar(
        "SELECT DISTINCT aggregate_id FROM events WHERE aggregate_type = 'run' AND aggregate_id = ANY($1)",
    )
    .bind(&ids)
    .fetch_all(pool)
    .await?;
    Ok(found.iter().filter_map(|id| id.parse().ok()).collect())
}

/// The `RunSubmitted` payloads (as `s`) the `runs` read model does not show yet:
/// unsealed, or sealed past the projection's checkpoint. With the read model in the
/// same statement (one snapshot), every submitted run is counted exactly once, so
/// an admission need not wait for the projector before the next one is decided.
/// Unsealed rows are read from the seal floor (`sealer::UNSEALED_ROW`).
pub const UNPROJECTED_SUBMISSIONS: &str = "unprojected AS (
    SELECT e.payload -> 'RunSubmitted' AS s FROM events e
     WHERE e.position IS NULL AND e.append_seq >= (SELECT append_seq FROM seal_floor)
       AND e.aggregate_type = 'run' AND e.event_type = 'RunSubmitted'
    UNION ALL
    SELECT e.payload -> 'RunSubmitted' FROM events e
     WHERE e.position > coalesce((SELECT position FROM projection_checkpoints WHERE name = 'runs'), 0)
       AND e.aggregate_type = 'run' AND e.event_type = 'RunSubmitted')";

/// Whose runs of a room a list shows.
#[derive(Debug, Clone, Copy)]
pub enum Submitter {
    /// Everyone's.
    Anyone,
    /// Those submitted with this API key (a restricted key's own).
    Key(Option<Uuid>),
    /// Those one principal submitted (an agent's own).
    Principal(PrincipalType, Uuid),
}

/// The room's runs newest first, of some statuses (all when empty), by
/// `submitter`.
pub async fn room_runs(
    pool: &PgPool,
    company: Uuid,
    room: Uuid,
    statuses: &[RunStatus],
    submitter: Submitter,
    window: Window<(DateTime<Utc>, Uuid)>,
) -> sqlx::Result<Vec<RunRow>> {
    let (after_time, after_id) = window
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    // Each submitter test is a statement of its own: a generic plan of one
    // statement for all (`$n IS NULL OR ...`) cannot use the submitter's index, and
    // walked the room's whole history for a submitter with few runs.
    let test = match submitter {
        Submitter::Anyone => "",
        Submitter::Key(_) => "AND api_key_id = $7",
        Submitter::Principal(..) => "AND principal_type = $7 AND principal_id = $8",
    };
    let sql = format!(
        "SELECT * FROM runs
          WHERE chatroom_id = $1 AND company_id = $2
            AND (cardinality($3::text[]) = 0 OR status = ANY($3)) {test}
            AND (queued_at, id) < ($4, $5)
          ORDER BY queued_at DESC, id DESC
          LIMIT $6"
    );
    let query = sqlx::query_as(&sql)
        .bind(room)
        .bind(company)
        .bind(statuses)
        .bind(after_time)
        .bind(after_id)
        .bind(window.limit);
    let query = match submitter {
        Submitter::Anyone => query,
        Submitter::Key(key) => query.bind(key),
        Submitter::Principal(kind, id) => query.bind(kind).bind(id),
    };
    query.fetch_all(pool).await
}

/// The places of runs in their queues, by run id, in one query: on-prem the
/// executor queue of every company (`queued` and `starting`), on managed cloud the
/// company's queued runs.
pub async fn queue_positions(
    pool: &PgPool,
    runs: &[&RunRow],
    onprem: bool,
) -> sqlx::Result<HashMap<Uuid, i64>> {
    if runs.is_empty() {
        return Ok(HashMap::new());
    }
    let statuses: &[RunStatus] = if onprem {
        &[RunStatus::Queued, RunStatus::Starting]
    } else {
        &[RunStatus::Queued]
    };
    let ids: Vec<Uuid> = runs.iter().map(|r| r.id).collect();
    let companies: Vec<Uuid> = runs.iter().map(|r| r.company_id).collect();
    let queued_at: Vec<DateTime<Utc>> = runs.iter().map(|r| r.queued_at).collect();
    let rows: Vec<(Uuid, i64)> = sqlx::query_as(
        "SELECT t.id, (SELECT count(*) FROM runs r
                        WHERE ($1 OR r.company_id = t.company_id) AND r.status = ANY($2)
                          AND (r.queued_at, r.id) <= (t.queued_at, t.id))
           FROM unnest($3::uuid[], $4::uuid[], $5::timestamptz[]) AS t(id, company_id, queued_at)",
    )
    .bind(onprem)
    .bind(statuses)
    .bind(&ids)
    .bind(&companies)
    .bind(&queued_at)
    .fetch_all(pool)
    .await?;
    Ok(rows.into_iter().collect())
}

/// Mean seconds of the last 20 completed runs of the profile (`None` without
/// history).
pub async fn mean_duration(pool: &PgPool, profile: &str) -> sqlx::Result<Option<f64>> {
    sqlx::query_scalar(
        "SELECT avg(extract(epoch FROM terminal_at - started_at))::float8 FROM (
            SELECT terminal_at, started_at FROM runs
             WHERE resource_profile = $1 AND status = 'completed' AND started_at IS NOT NULL
             ORDER BY terminal_at DESC LIMIT 20) recent",
    )
    .bind(profile)
    .fetch_one(pool)
    .await
}

/// What the queue limits count for a company.
#[derive(Debug, Clone, Copy, sqlx::FromRow)]
pub struct QueueCounts {
    /// The company's runs waiting for or being prepared by a worker.
    pub company: i64,
    /// The company's queued runs the queued-run limit counts (Quick Run aside,
    /// its retries included).
    pub counted: i64,
    /// Every company's waiting runs (the on-prem fleet queue).
    pub fleet: i64,
}

/// The queue counts of a company: the read model's waiting runs plus the
/// submissions it does not show yet (see [`UNPROJECTED_SUBMISSIONS`]).
pub async fn queue_counts(pool: &PgPool, company: Uuid) -> sqlx::Result<QueueCounts> {
    sqlx::query_as(&format!(
        "WITH {UNPROJECTED_SUBMISSIONS},
         waiting AS (
            SELECT company_id, status = 'queued'
                   AND (submission_source <> 'quick_run' OR retry_of_run_id IS NOT NULL) AS counted
              FROM runs WHERE status IN ('queued', 'starting')
            UNION ALL
            SELECT (s ->> 'company_id')::uuid,
                   s ->> 'submission_source' <> 'quick_run' OR s ->> 'retry_of_run_id' IS NOT NULL
              FROM unprojected)
         SELECT count(*) FILTER (WHERE company_id = $1) AS company,
                count(*) FILTER (WHERE company_id = $1 AND counted) AS counted,
                count(*) AS fleet
           FROM waiting"
    ))
    .bind(company)
    .fetch_one(pool)
    .await
}

/// The task's queued runs.
pub async fn queued_of_task(pool: &PgPool, task: Uuid) -> sqlx::Result<Vec<Uuid>> {
    sqlx::query_scalar("SELECT id FROM runs WHERE task_id = $1 AND status = 'queued'")
        .bind(task)
        .fetch_all(pool)
        .await
}

/// Filters of `GET /runs`.
#[derive(Debug, Clone, Default)]
pub struct RunFilters {
    /// Rooms (all when empty).
    pub rooms: Vec<Uuid>,
    /// Tasks (all when empty).
    pub tasks: Vec<Uuid>,
    /// Statuses (all when empty).
    pub statuses: Vec<RunStatus>,
    /// Only the caller's own submissions.
    pub submitted_by_me: bool,
    /// Queued at or after.
    pub queued_after: Option<DateTime<Utc>>,
    /// Queued before.
    pub queued_before: Option<DateTime<Utc>>,
}

/// The rooms (over `runs r`) principal `$1`/`$2`/`$3` (company, id, kind) can see:
/// every room for a company manager (`$4`), else the rooms it is a member or
/// manager of, or whose department it manages; then the filters `$5`..`$10`, but
/// `$8` ([`submitted_by_me`]).
const VISIBLE_FILTERED: &str = "r.company_id = $1 AND ($4 OR r.chatroom_id IN (
        SELECT c.id FROM chatrooms c WHERE c.company_id = $1 AND (
            EXISTS (SELECT 1 FROM chatroom_members m WHERE m.chatroom_id = c.id
                      AND m.member_kind = $3 AND m.member_id = $2 AND (m.is_member OR m.is_manager))
         OR ($3 = 'user' AND EXISTS (SELECT 1 FROM department_members d
                      WHERE d.department_id = c.department_id AND d.user_id = $2 AND d.is_manager)))))
    AND (cardinality($5::uuid[]) = 0 OR r.chatroom_id = ANY($5))
    AND (cardinality($6::uuid[]) = 0 OR r.task_id = ANY($6))
    AND (cardinality($7::text[]) = 0 OR r.status = ANY($7))
    AND ($9::timestamptz IS NULL OR r.queued_at >= $9)
    AND ($10::timestamptz IS NULL OR r.queued_at < $10)";

/// The test of [`RunFilters::submitted_by_me`] (`$8`), a statement of its own each
/// way: as `NOT $8 OR ...`, a generic plan could not use the submitter's index and
/// walked the company's whole history for a caller with few runs.
fn submitted_by_me(filters: &RunFilters) -> &'static str {
    if filters.submitted_by_me {
        "AND $8 AND r.principal_type = $3 AND r.principal_id = $2"
    } else {
        "AND NOT $8"
    }
}

fn visible_filtered<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    principal: &'q Principal,
    filters: &'q RunFilters,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    query
        .bind(principal.company_id)
        .bind(principal.principal_id)
        .bind(principal.principal_type)
        .bind(principal.is_company_manager())
        .bind(&filters.rooms)
        .bind(&filters.tasks)
        .bind(&filters.statuses)
        .bind(filters.submitted_by_me)
        .bind(filters.queued_after)
        .bind(filters.queued_before)
}

/// Runs of every room the caller can see, newest first.
pub async fn visible_runs(
    pool: &PgPool,
    principal: &Principal,
    filters: &RunFilters,
    window: Window<(DateTime<Utc>, Uuid)>,
) -> sqlx::Result<Vec<RunRow>> {
    let (after_time, after_id) = window
        .after
        .unwrap_or((DateTime::<Utc>::MAX_UTC, Uuid::max()));
    let sql = format!(
        "SELECT r.* FROM runs r WHERE {VISIBLE_FILTERED} {mine} AND (r.queued_at, r.id) < ($11, $12)
          ORDER BY r.queued_at DESC, r.id DESC LIMIT $13",
        mine = submitted_by_me(filters)
    );
    visible_filtered(sqlx::query_as(&sql), principal, filters)
        .bind(after_time)
        .bind(after_id)
        .bind(window.limit)
        .fetch_all(pool)
        .await
}

/// How many runs [`visible_runs`] would page through.
pub async fn visible_run_count(
    pool: &PgPool,
    principal: &Principal,
    filters: &RunFilters,
) -> sqlx::Result<i64> {
    let sql = format!(
        "SELECT count(*) FROM runs r WHERE {VISIBLE_FILTERED} {mine}",
        mine = submitted_by_me(filters)
    );
    let (count,): (i64,) = visible_filtered(sqlx::query_as(&sql), principal, filters)
        .fetch_one(pool)
        .await?;
    Ok(count)
}
