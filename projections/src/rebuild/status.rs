//! What operators see: each projection's position, the head, the lag and any
//! rebuild in progress.

use super::LOCK_CLASS;
use crate::projection::Projection;
use serde::Serialize;
use sqlx::PgConnection;
use std::sync::Arc;

/// One projection's state.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ProjectionStatus {
    /// Projection name.
    pub name: String,
    /// The position its live tables reflect.
    pub position: i64,
    /// The sealed head of the log.
    pub head: i64,
    /// `head - position`.
    pub lag: i64,
    /// The last error, while the projection is failing.
    pub failing: Option<String>,
    /// The rebuild in progress, if any.
    pub rebuild: Option<RebuildStatus>,
}

/// A rebuild that has started and not finished.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct RebuildStatus {
    /// Where its tables are built.
    pub shadow_schema: String,
    /// The position the shadow tables reflect.
    pub position: i64,
    /// Set for a point-in-time build.
    pub until: Option<i64>,
    /// Whether a process is working on it now (otherwise it was interrupted).
    pub running: bool,
}

#[derive(sqlx::FromRow)]
struct Row {
    name: String,
    position: Option<i64>,
    last_error: Option<String>,
    failing: bool,
    shadow_schema: Option<String>,
    rebuild_position: Option<i64>,
    until_position: Option<i64>,
    running: bool,
}

/// The state of every given projection.
pub async fn status(
    conn: &mut PgConnection,
    projections: &[Arc<dyn Projection>],
) -> anyhow::Result<Vec<ProjectionStatus>> {
    let head = crate::log::head(conn).await?;
    let names: Vec<&str> = projections.iter().map(|p| p.name()).collect();
    let rows: Vec<Row> = sqlx::query_as(
        "SELECT n.name, c.position, c.last_error, c.failing_since IS NOT NULL AS failing,
                r.shadow_schema, r.position AS rebuild_position, r.until_position,
                EXISTS (SELECT 1 FROM pg_locks l
                         WHERE l.locktype = 'advisory' AND l.granted AND l.objsubid = 2
                           AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
                           AND l.classid = $2::int4::oid AND l.objid = hashtext(n.name)::oid) AS running
           FROM unnest($1::text[]) WITH ORDINALITY AS n(name, ord)
           LEFT JOIN projection_checkpoints c ON c.name = n.name
           LEFT JOIN projection_rebuilds r ON r.name = n.name
          ORDER BY n.ord",
    )
    .bind(&names)
    .bind(LOCK_CLASS)
    .fetch_all(conn)
    .await?;
    Ok(rows
        .into_iter()
        .map(|row| {
            let position = row.position.unwrap_or(0);
            ProjectionStatus {
                name: row.name,
                position,
                head,
                lag: head - position,
                failing: row
                    .failing
                    .then(|| row.last_error.unwrap_or_else(|| "failing".into())),
                rebuild: row.shadow_schema.map(|shadow_schema| RebuildStatus {
                    shadow_schema,
                    position: row.rebuild_position.unwrap_or(0),
                    until: row.until_position,
                    running: row.running,
                }),
            }
        })
        .collect())
}
