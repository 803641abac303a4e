//! Rollups and lookups read linked records only as their caller may: every table
//! they read through a link enters the statement as a common table expression of
//! the rows the caller reads there, with the columns the caller does not see (or
//! that were deleted or retyped since) read as empty. The planner inlines it into
//! each computed column's subquery (`NOT MATERIALIZED`).

use super::super::physical::{ident, sql_type, table_name};
use super::TableHandle;
use super::compile::push_condition_as;
use domain::tables::column::computed::FallbackValue;
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
pub(super) fn gated(table_id: Uuid) -> String {
    format!("g_{}", table_id.simple())
}

/// The name under which an expression exposes a column read as a type: readers
/// created before and after a type change read it under different names, so the
/// expression never holds one name twice.
pub(super) fn exposed(key: &str, t: ColumnType) -> anyhow::Result<String> {
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

/// The caller's rows of a table, unfiltered.
fn plain(table_id: Uuid) -> Source<'static> {
    Source {
        name: gated(table_id),
        table_id,
        filter: None,
    }
}

/// The rows a computed column reads: a rollup's (filtered) linked rows, a lookup's
/// linked rows and fallback table, the tables a formula's cross-table references
/// read.
fn sources_of(column: &ColumnDef) -> Vec<Source<'_>> {
    if let Some(rollup) = &column.rollup {
        let filter = rollup.filter.as_deref();
        let name = match filter {
            Some(_) => match ident(&column.key) {
                Ok(key) => format!("{}_{key}", gated(rollup.target_table)),
                Err(_) => return Vec::new(),
            },
            None => gated(rollup.target_table),
        };
        return vec![Source {
            name,
            table_id: rollup.target_table,
            filter,
        }];
    }
    column.reads_tables().into_iter().map(plain).collect()
}

/// The name of the expression of the linked records a lookup with a fallback may
/// not read (a denial never falls back).
fn denied(column: &ColumnDef) -> anyhow::Result<String> {
    Ok(format!("d_{}", ident(&column.key)?))
}

/// The SQL of a rollup's or lookup's value for the row under `alias`.
pub(super) fn value(column: &ColumnDef, alias: &str) -> anyhow::Result<Option<String>> {
    if let Some(rollup) = &column.rollup {
        let name = sources_of(column)
            .into_iter()
            .next()
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
    let primary = match &lookup.pick {
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
    };
    let Some(fallback) = &lookup.fallback else {
        return Ok(Some(primary));
    };
    // The defaults record, unless the link names a record the caller may not read.
    let mut tests = Vec::with_capacity(fallback.pairs.len());
    for pair in &fallback.pairs {
        let (key, t) = &pair.column;
        let right = match &pair.value {
            FallbackValue::Row(mine) => format!("{alias}.{}", ident(mine)?),
            FallbackValue::Literal(value) => literal(value, *t)?,
        };
        tests.push(format!("f.{} = {right}", exposed(key, *t)?));
    }
    let (key, t) = &fallback.target_column;
    let defaults = format!(
        "(SELECT f.{} FROM {} AS f WHERE {} ORDER BY f.id LIMIT 1)",
        exposed(key, *t)?,
        gated(fallback.table),
        tests.join(" AND ")
    );
    let denial = format!(
        "(coalesce(cardinality({link}), 0) > 0 AND EXISTS (SELECT 1 FROM {} AS d WHERE d.every OR d.id = ANY({link})))",
        denied(column)?
    );
    Ok(Some(format!(
        "coalesce({primary}, CASE WHEN {denial} THEN NULL ELSE {defaults} END)"
    )))
}

/// A fallback literal (already in its column's canonical form) as SQL of the
/// column's type.
fn literal(value: &Value, t: ColumnType) -> anyhow::Result<String> {
    Ok(match value {
        Value::String(text) => format!("'{}'::{}", text.replace('\'', "''"), sql_type(t)),
        Value::Number(n) => format!("({n})::{}", sql_type(t)),
        Value::Bool(b) => if *b { "TRUE" } else { "FALSE" }.to_string(),
        other => anyhow::bail!("a fallback literal {other} is not a scalar"),
    })
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
            (_, Some(l)) => {
                let mut reads = Vec::new();
                if l.target_table == table_id {
                    reads.extend(l.target_columns());
                }
                if l.fallback.as_ref().is_some_and(|f| f.table == table_id) {
                    reads.extend(l.fallback_columns());
                }
                reads
            }
            _ => match &column.formula {
                Some(formula) => formula
                    .linked()
                    .into_iter()
                    .filter(|(t, ..)| *t == table_id)
                    .map(|(_, key, t)| (key, t))
                    .collect(),
                None => Vec::new(),
            },
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
        for found in self.readable().flat_map(sources_of) {
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
                        .filter(|c| c.reads_tables().is_empty())
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
        let mut any = !sources.is_empty();
        for column in self
            .readable()
            .filter(|c| c.lookup.as_ref().is_some_and(|l| l.fallback.is_some()))
        {
            qb.push(if any { ", " } else { "WITH " });
            any = true;
            self.push_denied(qb, column)?;
        }
        if any {
            qb.push(" ");
        }
        Ok(())
    }

    /// `d_<column> AS (...)`: the records a lookup with a fallback links to that the
    /// caller may not read (`every`: all of them, when the caller may not read the
    /// table or the looked-up columns).
    fn push_denied(
        &self,
        qb: &mut QueryBuilder<'static, Postgres>,
        column: &ColumnDef,
    ) -> anyhow::Result<()> {
        let Some(lookup) = &column.lookup else {
            return Ok(());
        };
        qb.push(format!("{} AS NOT MATERIALIZED (", denied(column)?));
        let gate = self
            .gates
            .iter()
            .find(|g| g.table_id == lookup.target_table)
            .filter(|g| {
                lookup.target_columns().iter().all(|(key, t)| {
                    g.columns
                        .iter()
                        .any(|c| &c.key == key && c.column_type == *t)
                })
            });
        match gate.map(|g| &g.rows) {
            None => {
                qb.push("SELECT NULL::uuid AS id, true AS every");
            }
            Some(None) => {
                qb.push("SELECT NULL::uuid AS id, false AS every WHERE false");
            }
            Some(Some(rows)) => {
                qb.push(format!(
                    "SELECT x.id, false AS every FROM {} AS x WHERE (",
                    table_name(lookup.target_table)
                ));
                push_condition_as(qb, rows, self.company_id, "x")?;
                qb.push(") IS NOT TRUE");
            }
        }
        qb.push(")");
        Ok(())
    }
}
