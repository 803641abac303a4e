//! A room's jobs list and the rooms that carry a job, as the chatroom settings
//! routes and the agent's tool gate read them.
//!
//! A room whose list is unset (`NULL`) is auto-detected: it carries the `sandbox`
//! job while at least one binding enables a task in it, and no other job. The rule
//! is written here once, in `EFFECTIVE_JOBS`.

use domain::principal::Principal;
use sqlx::PgPool;
use uuid::Uuid;

/// The job the sandbox's agent tools answer to.
pub const SANDBOX_JOB: &str = "sandbox";

/// The jobs room `r` carries: its list, or the auto-detected one.
const EFFECTIVE_JOBS: &str = "coalesce(r.jobs, CASE WHEN EXISTS (SELECT 1 FROM bindings b
              WHERE b.chatroom_id = r.id AND b.state = 'enabled' AND b.authority_applicable)
        THEN ARRAY['sandbox'] ELSE ARRAY[]::text[] END)";

/// Whether room `r` carries the job bound to parameter `$parameter`.
fn has_job(parameter: usize) -> String {
    format!("(${parameter} = ANY ({EFFECTIVE_JOBS}))")
}

/// A room's jobs: the list set on it (`None`: auto-detected) and the jobs it
/// carries now.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RoomJobs {
    /// The room.
    pub chatroom_id: Uuid,
    /// The list set by a manager, or `None`.
    pub jobs: Option<Vec<String>>,
    /// The jobs the room carries (the set list, or the auto-detected one).
    pub effective_jobs: Vec<String>,
}

/// The jobs of a live room of the company.
pub async fn room_jobs(pool: &PgPool, company: Uuid, room: Uuid) -> sqlx::Result<Option<RoomJobs>> {
    sqlx::query_as(&format!(
        "SELECT r.id AS chatroom_id, r.jobs, {EFFECTIVE_JOBS} AS effective_jobs
           FROM chatrooms r WHERE r.id = $1 AND r.company_id = $2 AND NOT r.archived"
    ))
    .bind(room)
    .bind(company)
    .fetch_optional(pool)
    .await
}

/// Whether a live room of the company carries the job.
pub async fn room_has_job(
    pool: &PgPool,
    company: Uuid,
    room: Uuid,
    job: &str,
) -> sqlx::Result<bool> {
    sqlx::query_scalar(&format!(
        "SELECT EXISTS (SELECT 1 FROM chatrooms r
          WHERE r.id = $1 AND r.company_id = $2 AND NOT r.archived AND {})",
        has_job(3)
    ))
    .bind(room)
    .bind(company)
    .bind(job)
    .fetch_one(pool)
    .await
}

/// Which rooms a job listing covers.
#[derive(Debug, Clone, Copy)]
pub struct RoomsWithJob<'a> {
    /// The caller.
    pub principal: &'a Principal,
    /// The job.
    pub job: &'a str,
    /// The department's rooms the caller can see; `None`: the rooms the caller joined.
    pub department: Option<Uuid>,
}

/// A room carrying the job, as the listing shows it.
#[derive(Debug, Clone, sqlx::FromRow)]
pub struct RoomWithJobRow {
    /// The room.
    pub chatroom_id: Uuid,
    /// Its name.
    pub name: String,
    /// Its department.
    pub department_id: Option<Uuid>,
    /// Whether the caller keeps it among its favourites.
    pub favourite: bool,
    /// The list set by a manager, or `None` (auto-detected).
    pub jobs: Option<Vec<String>>,
    /// The jobs it carries.
    pub effective_jobs: Vec<String>,
}

/// The filter shared by the page and its count: live rooms of the company carrying
/// job `$3`, joined by the caller (`$4` kind, `$5` id), or of department `$2` and
/// seen by the caller (member, or the chatroom manager ladder with `$6` = company
/// manager).
fn filter() -> String {
    format!(
        "FROM chatrooms r
         LEFT JOIN chatroom_members m
                ON m.chatroom_id = r.id AND m.member_kind = $4 AND m.member_id = $5
        WHERE r.company_id = $1 AND NOT r.archived AND {has_job}
          AND CASE WHEN $2::uuid IS NULL
                   THEN coalesce(m.is_member, false)
                   ELSE r.department_id = $2 AND (coalesce(m.is_member, false)
                        OR coalesce(m.is_manager, false) OR $6
                        OR ($4 = 'user' AND EXISTS (SELECT 1 FROM department_members d
                             WHERE d.department_id = r.department_id AND d.user_id = $5
                               AND d.is_manager)))
              END",
        has_job = has_job(3)
    )
}

/// A page of the rooms carrying a job: favourites first, then by name (`descending`
/// reverses the names, not the favourites), then by id.
pub async fn rooms_with_job(
    pool: &PgPool,
    of: RoomsWithJob<'_>,
    descending: bool,
    offset: i64,
    limit: i64,
) -> sqlx::Result<Vec<RoomWithJobRow>> {
    let direction = if descending { "DESC" } else { "ASC" };
    let sql = format!(
        "SELECT r.id AS chatroom_id, r.name, r.department_id,
                coalesce(m.is_favourite, false) AS favourite, r.jobs,
                {EFFECTIVE_JOBS} AS effective_jobs
           {filter}
          ORDER BY coalesce(m.is_favourite, false) DESC, r.name {direction}, r.id {direction}
          OFFSET $7 LIMIT $8",
        filter = filter()
    );
    bind(sqlx::query_as(&sql), of)
        .bind(offset)
        .bind(limit)
        .fetch_all(pool)
        .await
}

/// How many rooms [`rooms_with_job`] pages through.
pub async fn count_rooms_with_job(pool: &PgPool, of: RoomsWithJob<'_>) -> sqlx::Result<i64> {
    let sql = format!("SELECT count(*) {}", filter());
    let (total,): (i64,) = bind(sqlx::query_as(&sql), of).fetch_one(pool).await?;
    Ok(total)
}

/// Binds the filter's parameters `$1`..`$6`.
fn bind<'q, O>(
    query: sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments>,
    of: RoomsWithJob<'q>,
) -> sqlx::query::QueryAs<'q, sqlx::Postgres, O, sqlx::postgres::PgArguments> {
    query
        .bind(of.principal.company_id)
        .bind(of.department)
        .bind(of.job)
        .bind(of.principal.principal_type)
        .bind(of.principal.principal_id)
        .bind(of.principal.is_company_manager())
}
