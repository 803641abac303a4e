//! What a new column reads besides its own table, looked up in the caller's
//! company before the column is built: the link's target (or an incoming rollup's
//! source) and its columns, and the other tables a formula's cross-table
//! references or a lookup's fallback may read.

use super::column_schema::ColumnCreate;
use super::scope::{OpenTable, table_columns, table_row};
use crate::error::ApiResult;
use crate::state::AppState;
use domain::tables::column::{ColumnDef, ColumnType, LinkFacts, OtherTable};
use domain::tables::scope::ScopeRef;
use serde_json::Value;
use uuid::Uuid;

/// The tables a new column reads, as the caller's company knows them.
pub struct Sources {
    /// Where the link's target (or incoming source) sits, if it exists.
    pub link: Option<LinkFacts>,
    /// The columns of the table a rollup or lookup reads.
    pub link_targets: Vec<ColumnDef>,
    /// The other tables it may read.
    pub others: Vec<OtherTable>,
}

/// Where other tables of the company sit and what columns they have: the read
/// models for a route, the tables being built for a deployment.
pub trait Tables {
    /// A live table of the company: where it sits and its columns.
    fn find(
        &self,
        id: Uuid,
    ) -> impl std::future::Future<Output = ApiResult<Option<(LinkFacts, Vec<ColumnDef>)>>> + Send;
}

/// The tables of a company as the read models hold them.
pub struct Stored<'a> {
    /// The shared state.
    pub state: &'a AppState,
    /// The company.
    pub company_id: Uuid,
}

impl Tables for Stored<'_> {
    async fn find(&self, id: Uuid) -> ApiResult<Option<(LinkFacts, Vec<ColumnDef>)>> {
        let Some(row) = table_row(self.state, self.company_id, id).await? else {
            return Ok(None);
        };
        let facts = LinkFacts {
            company_id: row.company_id,
            scope: ScopeRef {
                kind: row.scope_kind,
                id: row.scope_id,
            },
        };
        Ok(Some((facts, table_columns(self.state, id).await?)))
    }
}

/// Looks up what `body` would read.
pub async fn of(table: &OpenTable, body: &ColumnCreate) -> ApiResult<Sources> {
    let tables = Stored {
        state: &table.caller.state,
        company_id: table.row.company_id,
    };
    gather(&tables, &table.all_columns, body).await
}

/// Looks up what `body`, a new column of a table with the columns `own`, would read.
pub async fn gather(
    tables: &impl Tables,
    own: &[ColumnDef],
    body: &ColumnCreate,
) -> ApiResult<Sources> {
    let link = match body.linked_table() {
        Some(id) => tables.find(id).await?.map(|(facts, _)| facts),
        None => None,
    };
    Ok(Sources {
        link,
        link_targets: link_targets(tables, own, body).await?,
        others: other_tables(tables, own, body).await?,
    })
}

/// The columns of the table a rollup or lookup reads: the one its `link_field`
/// targets, or an incoming rollup's source table (none for other columns, or when
/// the table does not exist).
async fn link_targets(
    tables: &impl Tables,
    own: &[ColumnDef],
    body: &ColumnCreate,
) -> ApiResult<Vec<ColumnDef>> {
    if !matches!(body.column_type, ColumnType::Rollup | ColumnType::Lookup) {
        return Ok(Vec::new());
    }
    let target = body.link_field.as_deref().and_then(|reference| {
        own.iter()
            .find(|c| c.is_named(reference))
            .and_then(|c| c.target_table_id)
    });
    match target.or(body.linked_table()) {
        Some(id) => Ok(tables.find(id).await?.map(|(_, c)| c).unwrap_or_default()),
        None => Ok(Vec::new()),
    }
}

/// The other tables a new column may read besides its link's target: the targets
/// of the table's link columns (a formula's cross-table references) and a lookup's
/// fallback table, those that exist in the caller's company.
async fn other_tables(
    tables: &impl Tables,
    own: &[ColumnDef],
    body: &ColumnCreate,
) -> ApiResult<Vec<OtherTable>> {
    let mut ids: Vec<Uuid> = Vec::new();
    match body.column_type {
        ColumnType::Formula if body.expression.as_deref().is_some_and(|e| e.contains("->")) => {
            ids.extend(
                own.iter()
                    .filter(|c| c.column_type == ColumnType::Link)
                    .filter_map(|c| c.target_table_id),
            );
        }
        ColumnType::Lookup => ids.extend(
            body.fallback
                .as_ref()
                .and_then(|f| f.get("table_id"))
                .and_then(Value::as_str)
                .and_then(|id| id.parse::<Uuid>().ok()),
        ),
        _ => {}
    }
    let mut others: Vec<OtherTable> = Vec::new();
    for id in ids {
        if others.iter().any(|o| o.id == id) {
            continue;
        }
        if let Some((facts, columns)) = tables.find(id).await? {
            others.push(OtherTable { id, facts, columns });
        }
    }
    Ok(others)
}
