//! New runs inserted together: the `RunSubmitted` events that follow one another in
//! a batch (a burst of admissions appends them side by side) become one multi-row
//! `INSERT` instead of one statement each.

use chrono::{DateTime, Utc};
use domain::runs::run::RunSubmitted;
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

/// Rows per statement (21 parameters each, well below PostgreSQL's 65,535).
const ROWS_PER_STATEMENT: usize = 1_000;

/// Submissions waiting to be inserted: a run's id, when it was submitted, what.
#[derive(Default)]
pub(super) struct Pending(Vec<(Uuid, DateTime<Utc>, Box<RunSubmitted>)>);

impl Pending {
    /// Holds a submission until the next [`Pending::insert`].
    pub(super) fn push(&mut self, id: Uuid, at: DateTime<Utc>, submitted: Box<RunSubmitted>) {
        self.0.push((id, at, submitted));
    }

    /// Inserts the held submissions as `queued` runs (a run already there stays as
    /// it is) and empties the set. Called before any other event of the batch is
    /// applied, so the log's order holds.
    pub(super) async fn insert(&mut self, conn: &mut PgConnection) -> sqlx::Result<()> {
        for rows in self.0.chunks(ROWS_PER_STATEMENT) {
            let mut insert = QueryBuilder::<Postgres>::new(
                "INSERT INTO runs (id, company_id, chatroom_id, task_id, task_version_id, share_grant_id,
                        principal_type, principal_id, auth_method, api_key_id, submission_source,
                        input_digest, input_key, input_bytes, timeout_seconds, resource_profile,
                        retry_of_run_id, status, artifact_count, content_state, queued_at, updated_at,
                        slot_sources, hold_amount, hold_rate) ",
            );
            insert.push_values(rows, |mut row, (id, at, s)| {
                row.push_bind(*id)
                    .push_bind(s.company_id)
                    .push_bind(s.chatroom_id)
                    .push_bind(s.task_id)
                    .push_bind(s.task_version_id)
                    .push_bind(s.share_grant_id)
                    .push_bind(s.principal_type.as_str())
                    .push_bind(s.principal_id)
                    .push_bind(s.auth_method.as_str())
                    .push_bind(s.api_key_id)
                    .push_bind(super::super::wire(&s.submission_source))
                    .push_bind(s.input_digest.clone())
                    .push_bind(s.input.key.clone())
                    .push_bind(s.input.byte_size)
                    .push_bind(s.timeout_seconds)
                    .push_bind(s.resource_profile.clone())
                    .push_bind(s.retry_of_run_id)
                    .push("'queued'")
                    .push("0")
                    .push("'active'")
                    .push_bind(*at)
                    .push_bind(*at)
                    .push_bind(s.slot_sources.clone().map(sqlx::types::Json))
                    .push_bind(s.hold.as_ref().map(|h| h.amount_micros))
                    .push_bind(s.hold.as_ref().map(|h| h.rate));
            });
            insert.push(" ON CONFLICT (id) DO NOTHING");
            insert.build().execute(&mut *conn).await?;
        }
        self.0.clear();
        Ok(())
    }
}
