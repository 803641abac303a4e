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

/// Looks up what `body` would read.
pub async fn of(table: &OpenTable, body: &ColumnCreate) -> ApiResult<Sources> {
    let state = &table.caller.state;
    Ok(Sources {
        link: link_facts(state, table.row.company_id, body.linked_table()).await?,
        link_targets: link_targets(table, body).await?,
        others: other_tables(table, body).await?,
    })
}

/// The columns of the table a rollup or lookup reads: the one its `link_field`
/// targets, or an incoming rollup's source table (none for other columns, or when
/// the table does not exist).
async fn link_targets(table: &OpenTable, body: &ColumnCreate) -> ApiResult<Vec<ColumnDef>> {
    if !matches!(body.column_type, ColumnType::Rollup | ColumnType::Lookup) {
        return Ok(Vec::new());
    }
    let target = body.link_field.as_deref().and_then(|reference| {
        table
            .all_columns
            .iter()
            .find(|c| c.is_named(reference))
            .and_then(|c| c.target_table_id)
    });
    let target = match target.or(body.linked_table()) {
        Some(id) => table_row(&table.caller.state, table.row.company_id, id)
            .await?
            .map(|row| row.id),
        None => None,
    };
    match target {
        Some(target) => table_columns(&table.caller.state, target).await,
        None => Ok(Vec::new()),
    }
}

/// The other tables a new column may read besides its link's target: the targets
/// of the table's link columns (a formula's cross-table references) and a lookup's
/// fallback table, those that exist in the caller's company.
async fn other_tables(table: &OpenTable, body: &ColumnCreate) -> ApiResult<Vec<OtherTable>> {
    let mut ids: Vec<Uuid> = Vec::new();
    match body.column_type {
        ColumnType::Formula if body.expression.as_deref().is_some_and(|e| e.contains("->")) => {
            ids.extend(
                table
                    .all_columns
                    .iter()
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
    let state = &table.caller.state;
    for id in ids {
        if others.iter().any(|o| o.id == id) {
            continue;
        }
        if let Some(facts) = link_facts(state, table.row.company_id, Some(id)).await? {
            others.push(OtherTable {
                id,
                facts,
                columns: table_columns(state, id).await?,
            });
        }
    }
    Ok(others)
}

/// What the caller's company knows about a link target.
async fn link_facts(
    state: &AppState,
    company_id: Uuid,
    target: Option<Uuid>,
) -> ApiResult<Option<LinkFacts>> {
    let Some(target) = target else {
        return Ok(None);
    };
    let Some(row) = table_row(state, company_id, target).await? else {
        return Ok(None);
    };
    let kind = row.scope_kind;
    Ok(Some(LinkFacts {
        company_id: row.company_id,
        scope: ScopeRef {
            kind,
            id: row.scope_id,
        },
    }))
}
