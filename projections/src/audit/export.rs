//! Exporting the sealed log as JSON Lines.
//!
//! Events are read in pages by position (keyset pagination), so an export of any size
//! holds one page in memory. A company filter selects the events of every aggregate
//! the company owns (the company itself, its settings, and every aggregate whose
//! events name it as `company_id`) plus every event its principals caused (metadata
//! `company_id`).

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::PgConnection;

/// One exported event: one line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExportedEvent {
    /// Global position.
    pub position: i64,
    /// When the event was decided (metadata `time`), when recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time: Option<String>,
    /// Aggregate type.
    pub aggregate_type: String,
    /// Aggregate id.
    pub aggregate_id: String,
    /// Sequence inside the aggregate.
    pub sequence: i64,
    /// Event type.
    pub event_type: String,
    /// Event version.
    pub event_version: String,
    /// The event.
    pub payload: Value,
    /// Who, when, which request.
    pub metadata: Value,
    /// The chain hash (hex) at this position; absent in hand-written logs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_hash: Option<String>,
}

/// Which events an export holds.
#[derive(Debug, Clone, Default)]
pub struct ExportFilter {
    /// First position (inclusive); default 1.
    pub from: Option<i64>,
    /// Last position (inclusive); default the head when the export starts.
    pub to: Option<i64>,
    /// Only this aggregate type.
    pub aggregate_type: Option<String>,
    /// Only this aggregate id.
    pub aggregate_id: Option<String>,
    /// Only the events of this company.
    pub company: Option<String>,
}

#[derive(sqlx::FromRow)]
struct Row {
    position: i64,
    aggregate_type: String,
    aggregate_id: String,
    sequence: i64,
    event_type: String,
    event_version: String,
    payload: Value,
    metadata: Value,
    chain_hash: Option<Vec<u8>>,
}

impl From<Row> for ExportedEvent {
    fn from(row: Row) -> Self {
        let time = row
            .metadata
            .get("time")
            .and_then(Value::as_str)
            .map(str::to_string);
        Self {
            position: row.position,
            time,
            aggregate_type: row.aggregate_type,
            aggregate_id: row.aggregate_id,
            sequence: row.sequence,
            event_type: row.event_type,
            event_version: row.event_version,
            payload: row.payload,
            metadata: row.metadata,
            chain_hash: row.chain_hash.map(hex::encode),
        }
    }
}

/// A running export: call [`Exporter::next_page`] until it returns an empty page.
pub struct Exporter {
    filter: ExportFilter,
    after: i64,
    to: i64,
    /// The (type, id) pairs the company owns, as two parallel columns.
    owned: Option<(Vec<String>, Vec<String>)>,
    page: i64,
}

impl Exporter {
    /// Starts an export: fixes its last position and, for a company, its aggregates.
    pub async fn start(conn: &mut PgConnection, filter: ExportFilter) -> anyhow::Result<Self> {
        let head = crate::log::head(conn).await?;
        let to = filter.to.map_or(head, |to| to.min(head));
        let after = filter.from.unwrap_or(1).max(1) - 1;
        let owned = match &filter.company {
            Some(company) => Some(owned_by(conn, company, to).await?),
            None => None,
        };
        Ok(Self {
            filter,
            after,
            to,
            owned,
            page: 2_000,
        })
    }

    /// The position of the last event the export can hold.
    pub fn last_position(&self) -> i64 {
        self.to
    }

    /// The position the export starts after.
    pub fn first_position(&self) -> i64 {
        self.after + 1
    }

    /// The next page of matching events; empty when the export is complete.
    pub async fn next_page(
        &mut self,
        conn: &mut PgConnection,
    ) -> anyhow::Result<Vec<ExportedEvent>> {
        if self.after >= self.to {
            return Ok(Vec::new());
        }
        let (types, ids) = self.owned.clone().unwrap_or_default();
        let rows: Vec<Row> = sqlx::query_as(
            "SELECT position, aggregate_type, aggregate_id, sequence, event_type, event_version,
                    payload, metadata, chain_hash
               FROM events
              WHERE position > $1 AND position <= $2
                AND ($3::text IS NULL OR aggregate_type = $3)
                AND ($4::text IS NULL OR aggregate_id = $4)
                AND ($5::text IS NULL
                     OR metadata->>'company_id' = $5
                     OR (aggregate_type, aggregate_id) IN (SELECT * FROM unnest($6::text[], $7::text[])))
              ORDER BY position
              LIMIT $8",
        )
        .bind(self.after)
        .bind(self.to)
        .bind(&self.filter.aggregate_type)
        .bind(&self.filter.aggregate_id)
        .bind(&self.filter.company)
        .bind(&types)
        .bind(&ids)
        .bind(self.page)
        .fetch_all(conn)
        .await?;
        // A short page means nothing matches up to `to`.
        self.after = match rows.last() {
            Some(last) if rows.len() as i64 == self.page => last.position,
            _ => self.to,
        };
        Ok(rows.into_iter().map(ExportedEvent::from).collect())
    }
}

/// The aggregates a company owns: its own (company, settings: id = company id) and
/// every aggregate one of whose events names it as `company_id`.
async fn owned_by(
    conn: &mut PgConnection,
    company: &str,
    to: i64,
) -> anyhow::Result<(Vec<String>, Vec<String>)> {
    let rows: Vec<(String, String)> = sqlx::query_as(
        "SELECT DISTINCT aggregate_type, aggregate_id FROM events
          WHERE position <= $2
            AND (aggregate_id = $1
                 OR jsonb_path_exists(payload::jsonb, '$.*.company_id ? (@ == $c)',
                                      jsonb_build_object('c', $1::text)))",
    )
    .bind(company)
    .bind(to)
    .fetch_all(conn)
    .await?;
    Ok(rows.into_iter().unzip())
}
