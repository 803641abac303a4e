//! Run contents past their company's `run_content_retention_days`: a day ahead
//! the submitter is warned (`RunContentExpiring`), at the end the objects go
//! (`RunContentExpired`).

use super::metadata;
use crate::admission;
use crate::runtime::Runtime;
use chrono::{DateTime, Utc};
use domain::runs::run::{Run, RunCommand};
use domain::settings::PolicyValues;
use uuid::Uuid;

/// How long before the end of retention the submitter is warned.
pub const WARNING_LEAD: chrono::TimeDelta = chrono::TimeDelta::days(1);

#[derive(sqlx::FromRow)]
struct ExpiredRun {
    id: Uuid,
    company_id: Uuid,
    input_key: String,
    log_key: Option<String>,
    output_key: Option<String>,
    bundle_key: Option<String>,
}

/// Marks the contents of ended runs past their retention expired, then deletes
/// their objects (an inputs file only when no active run shares it and nothing
/// staged it in the last hour).
///
/// Retention differs per company, so the runs are read company by company, each
/// an index range up to its own bound (`runs_company_active_contents`): read in one
/// range of `terminal_at`, a pass walked every run whose contents are active. A
/// company that has not recorded a policy keeps the default
/// ([`PolicyValues::DEFAULT_RETENTION_DAYS`]; its settings row may exist for
/// operator limits alone, with no retention in it).
pub(super) async fn expire(state: &Runtime, now: DateTime<Utc>) -> anyhow::Result<()> {
    let expired: Vec<ExpiredRun> = sqlx::query_as(
        "SELECT r.id, r.company_id, r.input_key, r.log_key, r.output_key, r.bundle_key
           FROM companies c LEFT JOIN company_settings s ON s.company_id = c.id AND s.recorded
           CROSS JOIN LATERAL (SELECT make_interval(days => coalesce(s.run_content_retention_days, $2))) kept(days)
           CROSS JOIN LATERAL (
                SELECT * FROM runs r
                 WHERE r.company_id = c.id AND r.content_state = 'active' AND r.terminal_at IS NOT NULL
                   AND r.terminal_at < $1 - kept.days
                 ORDER BY r.terminal_at LIMIT 500) r
          ORDER BY r.terminal_at LIMIT 500",
    )
    .bind(now)
    .bind(PolicyValues::DEFAULT_RETENTION_DAYS)
    .fetch_all(&state.pool)
    .await?;
    for run in expired {
        // One run's failure (an object the store will not delete) leaves the
        // others to expire; the next pass tries it again.
        let run_id = run.id;
        if let Err(error) = expire_one(state, run, now).await {
            tracing::warn!(%run_id, error = format!("{error:#}"), "a run's contents did not expire");
        }
    }
    Ok(())
}

/// Deletes one run's objects (its input unless shared or staged again), then
/// records the expiry.
async fn expire_one(state: &Runtime, run: ExpiredRun, now: DateTime<Utc>) -> anyhow::Result<()> {
    // The objects go first, then the expiry is recorded: deleting is
    // idempotent, so a pass that fails between the two (a crash, a store
    // error) finds the run active again and finishes it; recorded first, an
    // expired run's objects would never be looked at again.
    for key in [run.log_key, run.output_key, run.bundle_key]
        .into_iter()
        .flatten()
    {
        state.objects.delete(&key).await?;
    }
    // Inputs are content-addressed and shared: a submission or a retry puts
    // the same bytes in place under the object's lock, so under it a file
    // another run holds, or one written in the last hour, is kept.
    let lock = admission::object_lock(&state.pool, run.company_id, &run.input_key).await?;
    let shared: bool = sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM runs WHERE input_key = $1 AND content_state = 'active' AND id <> $2)",
    )
    .bind(&run.input_key)
    .bind(run.id)
    .fetch_one(&state.pool)
    .await?;
    let recent = state
        .objects
        .modified_at(&run.input_key)
        .await?
        .is_some_and(|at| at > now - chrono::Duration::hours(1));
    if !shared && !recent {
        state.objects.delete(&run.input_key).await?;
    }
    drop(lock);
    state
        .bus
        .record::<Run>(
            &run.id.to_string(),
            RunCommand::ExpireContent,
            &metadata(run.company_id, run.id, now),
        )
        .await?;
    Ok(())
}

/// Warns the submitters of ended runs whose contents expire within
/// [`WARNING_LEAD`] (once a run; a run already past its retention is expired, not
/// warned). Read company by company as [`expire`] does; the range's bounds are a
/// day wider than the window, which the exact test then narrows (a day of the
/// session's time zone may be 23 or 25 hours).
pub(super) async fn warn(state: &Runtime, now: DateTime<Utc>) -> anyhow::Result<()> {
    let expiring: Vec<(Uuid, Uuid, DateTime<Utc>)> = sqlx::query_as(
        "SELECT r.id, r.company_id, r.expires_at
           FROM companies c LEFT JOIN company_settings s ON s.company_id = c.id AND s.recorded
           CROSS JOIN LATERAL (SELECT make_interval(days => coalesce(s.run_content_retention_days, $3))) kept(days)
           CROSS JOIN LATERAL (
                SELECT r.id, r.company_id, r.terminal_at, r.terminal_at + kept.days AS expires_at
                  FROM runs r
                 WHERE r.company_id = c.id AND r.content_state = 'active' AND r.terminal_at IS NOT NULL
                   AND r.terminal_at >= $1 - kept.days - interval '1 day'
                   AND r.terminal_at <= $1 + $2 - kept.days + interval '1 day'
                   AND r.content_expiring_at IS NULL
                   AND r.terminal_at + kept.days BETWEEN $1 AND $1 + $2
                 ORDER BY r.terminal_at LIMIT 500) r
          ORDER BY r.terminal_at LIMIT 500",
    )
    .bind(now)
    .bind(WARNING_LEAD)
    .bind(PolicyValues::DEFAULT_RETENTION_DAYS)
    .fetch_all(&state.pool)
    .await?;
    for (id, company, expires_at) in expiring {
        state
            .bus
            .record::<Run>(
                &id.to_string(),
                RunCommand::WarnContentExpiring { expires_at },
                &metadata(company, id, now),
            )
            .await?;
    }
    Ok(())
}
