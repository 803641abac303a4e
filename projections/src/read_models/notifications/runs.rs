//! Run notifications: `run_terminal` when a run ends, `run_content_expiring` a
//! day before its contents expire and `run_content_expired` when they passed
//! their retention, each addressed to the run's submitter
//! (`{scope: user | social_media_client, id}`), remembered from its submission in
//! `notification_runs`.

use crate::log::StoredEvent;
use anyhow::Context;
use domain::runs::run::{Run, RunEvent};
use serde_json::{Value, json};
use sqlx::{PgConnection, Postgres, QueryBuilder};
use uuid::Uuid;

/// Applies the run events of a batch, in log order, and returns the notifications
/// raised. Submissions that follow one another (a burst of admissions) are
/// remembered in one statement; any other run event first writes what waits, since
/// it reads the submitter back.
pub(super) async fn apply(
    conn: &mut PgConnection,
    events: &[StoredEvent],
) -> anyhow::Result<Vec<Uuid>> {
    let mut submitters = Vec::new();
    let mut raised = Vec::new();
    for event in events {
        let Some(decoded) = event.decode::<Run>()? else {
            continue;
        };
        let run_id: Uuid = event.aggregate_id.parse().context("run id")?;
        if let RunEvent::RunSubmitted(submitted) = decoded {
            submitters.push(Submitter {
                run_id,
                company_id: submitted.company_id,
                chatroom_id: submitted.chatroom_id,
                task_id: submitted.task_id,
                principal_type: submitted.principal_type.as_str().to_string(),
                principal_id: submitted.principal_id,
            });
            continue;
        }
        remember(conn, &mut submitters).await?;
        let (kind, payload) = match decoded {
            RunEvent::RunFinished(ended) => (
                "run_terminal",
                json!({"terminal_class": ended.terminal_class, "error_code": ended.error_code}),
            ),
            RunEvent::RunContentExpiring { expires_at } => {
                ("run_content_expiring", json!({"expires_at": expires_at}))
            }
            RunEvent::RunContentExpired => ("run_content_expired", json!({})),
            _ => continue,
        };
        raised.extend(notify(conn, event, run_id, kind, payload).await?);
    }
    remember(conn, &mut submitters).await?;
    Ok(raised)
}

/// Rows per statement (six parameters each, well below PostgreSQL's 65,535).
const ROWS_PER_STATEMENT: usize = 5_000;

/// Remembers the submitters of new runs (a run already remembered keeps its row)
/// and empties the list.
async fn remember(conn: &mut PgConnection, submitters: &mut Vec<Submitter>) -> anyhow::Result<()> {
    for rows in submitters.chunks(ROWS_PER_STATEMENT) {
        let mut insert = QueryBuilder::<Postgres>::new(
            "INSERT INTO notification_runs (run_id, company_id, chatroom_id, task_id, principal_type, principal_id) ",
        );
        insert.push_values(rows, |mut row, s| {
            row.push_bind(s.run_id)
                .push_bind(s.company_id)
                .push_bind(s.chatroom_id)
                .push_bind(s.task_id)
                .push_bind(&s.principal_type)
                .push_bind(s.principal_id);
        });
        insert.push(" ON CONFLICT (run_id) DO NOTHING");
        insert.build().execute(&mut *conn).await?;
    }
    submitters.clear();
    Ok(())
}

/// A run's submitter, as `notification_runs` remembers it.
#[derive(sqlx::FromRow)]
struct Submitter {
    run_id: Uuid,
    company_id: Uuid,
    chatroom_id: Uuid,
    task_id: Uuid,
    principal_type: String,
    principal_id: Uuid,
}

/// Stores one notification about a run for its submitter; returns its id, or
/// nothing for a run whose submission this projection did not see.
async fn notify(
    conn: &mut PgConnection,
    event: &StoredEvent,
    run_id: Uuid,
    kind: &str,
    mut payload: Value,
) -> anyhow::Result<Option<Uuid>> {
    let submitter: Option<Submitter> = sqlx::query_as(
        "SELECT run_id, company_id, chatroom_id, task_id, principal_type, principal_id
           FROM notification_runs WHERE run_id = $1",
    )
    .bind(run_id)
    .fetch_optional(&mut *conn)
    .await?;
    let Some(submitter) = submitter else {
        return Ok(None);
    };
    payload["run_id"] = json!(run_id);
    payload["chatroom_id"] = json!(submitter.chatroom_id);
    payload["task_id"] = json!(submitter.task_id);
    let recipients = json!([{"scope": submitter.principal_type, "id": submitter.principal_id}]);
    let id = domain::ids::derive("notification", &[kind, &run_id.to_string()]);
    sqlx::query(
        "INSERT INTO notifications (id, company_id, kind, recipients, payload, created_at, position)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
    )
    .bind(id)
    .bind(submitter.company_id)
    .bind(kind)
    .bind(recipients)
    .bind(payload)
    .bind(event.time())
    .bind(event.position)
    .execute(&mut *conn)
    .await?;
    Ok(Some(id))
}
