//! Rollups and lookups read linked records only as their caller may: every table
//! they read through a link enters the statement as a common table expression of
//! the rows the caller reads there, with the columns the caller does not see (or
//! that were deleted or retyped since) read as empty. The planner inlines it into
//! each computed column's subquery (`NOT MATERIALIZED`).

use super::super::physical::{ident, sql_type, table_name};
use super::TableHandle;
use super::compile::push_condition_as;
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::query::{self, AggregateOp, Condition};
use serde_json::{Value, json};
use sqlx::{Postgres, QueryBuilder};
use uuid::Uuid;

/// What the caller may read of a table that rollups and lookups read.
#[derive(Debug, Clone)]
pub struct Gate {
    /// The table.
    pub table_id: Uuid,
    /// The rows the caller reads there (`None`: every row).
    pub rows: Option<Condition>,
    /// The columns the caller sees there.
    pub columns: Vec<ColumnDef>,
}

/// The name of the expression of a read table's rows.
fn gated(table_id: Uuid) -> String {
    format!("g_{}", table_id.simple())
}

/// The name under which an expression exposes a column read as a type: readers
/// created before and after a type change read it under different names, so the
/// expression never holds one name twice.
fn exposed(key: &str, t: ColumnType) -> anyhow::Result<String> {
    Ok(format!("{}_{}", ident(key)?, t.as_str()))
}

/// The rows a rollup or lookup reads: the caller's rows of the linked table, and
/// for a rollup with a `filter` those of them that match it (an expression of its
/// own).
struct Source<'a> {
    name: String,
    table_id: Uuid,
    filter: Option<&'a [Value]>,
}

fn source(column: &ColumnDef) -> Option<Source<'_>> {
    if let Some(rollup) = &column.rollup {
        let filter = rollup.filter.as_deref();
        let name = match filter {
            Some(_) => format!(
                "{}_{}",
                gated(rollup.target_table),
                ident(&column.key).ok()?
            ),
            None => gated(rollup.target_table),
        };
        return Some(Source {
            name,
            table_id: rollup.target_table,
            filter,
        });
    }
    column.lookup.as_ref().map(|lookup| Source {
        name: gated(lookup.target_table),
        table_id: lookup.target_table,
        filter: None,
    })
}

/// The SQL of a rollup's or lookup's value for the row under `alias`.
pub(super) fn value(column: &ColumnDef, alias: &str) -> anyhow::Result<Option<String>> {
    if let Some(rollup) = &column.rollup {
        let name = source(column)
            .map(|s| s.name)
            .ok_or_else(|| anyhow::anyhow!("column key {} is not an identifier", column.key))?;
        let from = match (&rollup.incoming, &rollup.link_field) {
            // Source records whose link columns link to this record (`$self`) or
            // to the record this record's cardinality-one link names.
            (Some(pairs), _) => {
                let mut tests = Vec::with_capacity(pairs.len());
                for pair in pairs {
                    let theirs = exposed(&pair.source, ColumnType::Link)?;
                    tests.push(match &pair.mine {
                        None => format!("r.{theirs} @> ARRAY[{alias}.id]"),
                        Some(mine) => format!("r.{theirs} && {alias}.{}", ident(mine)?),
                    });
                }
                format!("FROM {name} AS r WHERE {}", tests.join(" AND "))
            }
            (None, Some(link)) => format!(
                "FROM {name} AS r WHERE r.id = ANY({alias}.{})",
                ident(link)?
            ),
            (None, None) => anyhow::bail!("a rollup without link_field or match"),
        };
        let target = rollup
            .target_column
            .as_ref()
            .map(|(key, t)| exposed(key, *t).map(|k| (k, *t)))
            .transpose()?;
        let aggregate = match (rollup.aggregation, target) {
            (AggregateOp::Count, _) | (_, None) => "count(*)".to_string(),
            (AggregateOp::CountDistinct, Some((k, _))) => format!("count(DISTINCT r.{k})"),
            (AggregateOp::Sum, Some((k, ColumnType::Integer))) => {
                format!("ct_formula_integer(sum(r.{k}))")
            }
            (AggregateOp::Sum, Some((k, _))) => format!("sum(r.{k})"),
            (AggregateOp::Avg, Some((k, _))) => format!("avg(r.{k})::double precision"),
            (AggregateOp::Min, Some((k, _))) => format!("min(r.{k})"),
            (AggregateOp::Max, Some((k, _))) => format!("max(r.{k})"),
        };
        return Ok(Some(format!("(SELECT {aggregate} {from})")));
    }
    let Some(lookup) = &column.lookup else {
        return Ok(None);
    };
    let link = format!("{alias}.{}", ident(&lookup.link_field)?);
    let key = exposed(&lookup.target_column.0, lookup.target_column.1)?;
    let from = format!(
        "FROM {} AS r WHERE r.id = ANY({link})",
        gated(lookup.target_table)
    );
    // Ties break by link position, then id.
    let position = format!("array_position({link}, r.id), r.id");
    Ok(Some(match &lookup.pick {
        None if lookup.many => format!(
            "(SELECT coalesce(jsonb_agg(to_jsonb(r.{key}) ORDER BY {position}) \
             FILTER (WHERE r.{key} IS NOT NULL), '[]'::jsonb) {from})"
        ),
        None => format!("(SELECT r.{key} {from} ORDER BY {position} LIMIT 1)"),
        Some(pick) => format!(
            "(SELECT r.{key} {from} ORDER BY r.{} {} NULLS LAST, {position} LIMIT 1)",
            exposed(&pick.order_column.0, pick.order_column.1)?,
            if pick.descending { "DESC" } else { "ASC" }
        ),
    }))
}

/// The target columns the handle's rollups and lookups read in `table_id`.
fn needed(columns: &[ColumnDef], table_id: Uuid) -> Vec<(String, ColumnType)> {
    let mut out: Vec<(String, ColumnType)> = Vec::new();
    for column in columns {
        let reads = match (&column.rollup, &column.lookup) {
            (Some(r), _) if r.target_table == table_id => {
                let mut reads: Vec<(String, ColumnType)> =
                    r.target_column.iter().cloned().collect();
                for pair in r.incoming.iter().flatten() {
                    reads.push((pair.source.clone(), ColumnType::Link));
                }
                reads
            }
            (_, Some(l)) if l.target_table == table_id => l.target_columns(),
            _ => Vec::new(),
        };
        for read in reads {
            if !out.contains(&read) {
                out.push(read);
            }
        }
    }
    out
}

impl TableHandle {
    /// `WITH g_<table> AS (...)` for every table the readable columns read through
    /// links, and one for each filtered rollup (nothing when none reads any), ready
    /// for a `SELECT`.
    pub(super) fn push_with(&self, qb: &mut QueryBuilder<'static, Postgres>) -> anyhow::Result<()> {
        let mut sources: Vec<Source<'_>> = Vec::new();
        for found in self.readable().filter_map(source) {
            if !sources.iter().any(|s| s.name == found.name) {
                sources.push(found);
            }
        }
        for (i, source) in sources.iter().enumerate() {
            qb.push(if i == 0 { "WITH " } else { ", " });
            qb.push(format!("{} AS NOT MATERIALIZED (SELECT ", source.name));
            let gate = self.gates.iter().find(|g| g.table_id == source.table_id);
            let filter = match (gate, source.filter) {
                (Some(gate), Some(filter)) => {
                    // Filters read stored and formula columns, never another link.
                    let filterable: Vec<ColumnDef> = gate
                        .columns
                        .iter()
                        .filter(|c| c.reads_table().is_none())
                        .cloned()
                        .collect();
                    Some(query::resolve_filter(&json!({"and": filter}), &filterable).ok())
                }
                _ => None,
            };
            // Nothing is read of a table the caller may not read (or that is gone),
            // nor through a filter naming a column the caller does not see.
            let readable = match (gate, &filter) {
                (None, _) | (_, Some(None)) => None,
                (Some(gate), _) => Some(gate),
            };
            let mut list = vec![match readable {
                Some(_) => "g.id".to_string(),
                None => "NULL::uuid AS id".to_string(),
            }];
            for (key, t) in needed(&self.columns, source.table_id) {
                let name = exposed(&key, t)?;
                let seen = readable
                    .is_some_and(|g| g.columns.iter().any(|c| c.key == key && c.column_type == t));
                list.push(if seen {
                    format!("g.{} AS {name}", ident(&key)?)
                } else {
                    format!("NULL::{} AS {name}", sql_type(t))
                });
            }
            qb.push(list.join(", "));
            match readable {
                None => {
                    qb.push(" WHERE false");
                }
                Some(gate) => {
                    qb.push(format!(" FROM {} AS g WHERE ", table_name(source.table_id)));
                    match &gate.rows {
                        None => {
                            qb.push("true");
                        }
                        Some(rows) => push_condition_as(qb, rows, self.company_id, "g")?,
                    }
                    if let Some(Some(filter)) = &filter {
                        qb.push(" AND ");
                        push_condition_as(qb, filter, self.company_id, "g")?;
                    }
                }
            }
            qb.push(")");
        }
        if !sources.is_empty() {
            qb.push(" ");
        }
        Ok(())
    }
}
