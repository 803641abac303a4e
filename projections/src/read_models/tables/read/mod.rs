//! Reading records from a custom table's physical table: filtered, sorted pages,
//! counts, aggregations and streamed exports. Callers pass an already-authorized
//! [`TableHandle`] (company, table and its columns), never a bare id.

mod blobs;
mod compile;
mod decode;
mod formula;
mod gate;

pub use compile::Selection;
pub use decode::{RecordRow, decode_cell};
pub use gate::Gate;

use super::physical::{ident, table_name};
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::query::{AggregateOp, Field};
use futures::TryStreamExt;
use serde_json::Value;
use sqlx::{PgConnection, PgPool, Postgres, QueryBuilder, Row};
use uuid::Uuid;

/// A table the caller was authorized for.
#[derive(Debug, Clone)]
pub struct TableHandle {
    /// The company.
    pub company_id: Uuid,
    /// The table.
    pub table_id: Uuid,
    /// Its columns in order.
    pub columns: Vec<ColumnDef>,
    /// What the caller may read of the tables its rollups and lookups read.
    pub gates: Vec<Gate>,
}

impl TableHandle {
    /// The columns records show: stored and computed columns.
    fn readable(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns.iter().filter(|c| c.is_readable())
    }

    /// The record columns a page reads: the system fields, the selection's flag,
    /// the projected stored columns, then `extra` (SQL after a comma, or empty).
    fn select_list(
        &self,
        selection: &Selection,
        extra: &str,
    ) -> anyhow::Result<(QueryBuilder<'static, Postgres>, Vec<ColumnDef>)> {
        let mut qb = QueryBuilder::new("");
        self.push_with(&mut qb)?;
        qb.push("SELECT t.id, t.created_at, t.updated_at, t.created_by, ");
        match &selection.flag {
            Some(flag) => {
                qb.push("((");
                compile::push_condition(&mut qb, flag, self.company_id)?;
                qb.push(") IS TRUE)");
            }
            None => {
                qb.push("NULL::boolean");
            }
        }
        let projection = selection.projection.as_deref();
        let mut list = String::new();
        let mut columns = Vec::new();
        for column in self.readable() {
            if projection.is_some_and(|keys| !keys.contains(&column.key)) {
                continue;
            }
            list.push_str(", ");
            list.push_str(&compile::field_sql(&Field::Column(Box::new(
                column.clone(),
            )))?);
            columns.push(column.clone());
        }
        qb.push(list);
        if !extra.is_empty() {
            qb.push(", ");
            qb.push(extra);
        }
        self.push_from(&mut qb, selection)?;
        Ok((qb, columns))
    }

    fn push_from(
        &self,
        qb: &mut QueryBuilder<'static, Postgres>,
        selection: &Selection,
    ) -> anyhow::Result<()> {
        qb.push(format!(" FROM {} AS t", table_name(self.table_id)));
        selection.push_where(qb, self)
    }

    fn query(
        &self,
        select: &str,
        selection: &Selection,
    ) -> anyhow::Result<QueryBuilder<'static, Postgres>> {
        let mut qb = QueryBuilder::new("");
        self.push_with(&mut qb)?;
        qb.push(format!("SELECT {select}"));
        self.push_from(&mut qb, selection)?;
        Ok(qb)
    }

    /// One page of records.
    pub async fn page(
        &self,
        pool: &PgPool,
        selection: &Selection,
    ) -> anyhow::Result<Vec<RecordRow>> {
        let (mut qb, columns) = self.select_list(selection, "")?;
        selection.push_order(&mut qb)?;
        selection.push_window(&mut qb);
        let rows = qb.build().persistent(false).fetch_all(pool).await?;
        rows.iter()
            .map(|row| decode::record(row, &columns))
            .collect()
    }

    /// One page of records and how many records the selection matches, by one
    /// query: the count is a window over every match, so this suits selections
    /// with few matches and callers that keep the count. The count is `None` when
    /// the page is empty and skipped rows (no row carries it; with nothing skipped
    /// it is 0).
    pub async fn page_counted(
        &self,
        pool: &PgPool,
        selection: &Selection,
    ) -> anyhow::Result<(Vec<RecordRow>, Option<i64>)> {
        let (mut qb, columns) = self.select_list(selection, "count(*) OVER ()")?;
        selection.push_order(&mut qb)?;
        selection.push_window(&mut qb);
        let rows = qb.build().persistent(false).fetch_all(pool).await?;
        let total = match rows.first() {
            Some(row) => Some(row.try_get::<i64, _>(5 + columns.len())?),
            None => (selection.offset == 0).then_some(0),
        };
        let records = rows
            .iter()
            .map(|row| decode::record(row, &columns))
            .collect::<anyhow::Result<_>>()?;
        Ok((records, total))
    }

    /// Records matching the selection's filter.
    pub async fn count(&self, pool: &PgPool, selection: &Selection) -> anyhow::Result<i64> {
        let mut qb = self.query("count(*)", selection)?;
        Ok(qb
            .build_query_scalar::<i64>()
            .persistent(false)
            .fetch_one(pool)
            .await?)
    }

    /// The matching records of several tables, counted by one query (one scalar
    /// subquery per table).
    pub async fn count_each(
        pool: &PgPool,
        items: &[(TableHandle, Selection)],
    ) -> anyhow::Result<Vec<i64>> {
        if items.is_empty() {
            return Ok(Vec::new());
        }
        let mut qb = QueryBuilder::new("SELECT ARRAY[");
        for (i, (handle, selection)) in items.iter().enumerate() {
            if i > 0 {
                qb.push(", ");
            }
            qb.push("(");
            handle.push_with(&mut qb)?;
            qb.push("SELECT count(*)");
            handle.push_from(&mut qb, selection)?;
            qb.push(")");
        }
        qb.push("]::bigint[]");
        // Prepared and cached per connection: the same caller's same page repeats
        // the same text, and planning fifty subqueries costs more than running them.
        Ok(qb
            .build_query_scalar::<Vec<i64>>()
            .persistent(true)
            .fetch_one(pool)
            .await?)
    }

    /// The columns a projection (internal keys; `None` for all) selects.
    pub fn projected(&self, projection: Option<&[String]>) -> Vec<ColumnDef> {
        self.readable()
            .filter(|c| projection.is_none_or(|keys| keys.contains(&c.key)))
            .cloned()
            .collect()
    }

    /// Every matching record in order, read by one query whose rows arrive as the
    /// caller consumes them; `each` returns false to stop early.
    pub async fn scan<F, Fut>(
        &self,
        conn: &mut PgConnection,
        selection: &Selection,
        mut each: F,
    ) -> anyhow::Result<()>
    where
        F: FnMut(RecordRow) -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let (mut qb, columns) = self.select_list(selection, "")?;
        selection.push_order(&mut qb)?;
        let mut rows = qb.build().persistent(false).fetch(conn);
        while let Some(row) = rows.try_next().await? {
            if !each(decode::record(&row, &columns)?).await {
                break;
            }
        }
        Ok(())
    }

    /// Groups and aggregates matching records (at most 1,000 groups).
    pub async fn aggregate(
        &self,
        pool: &PgPool,
        selection: &Selection,
        group_by: &[Field],
        aggregations: &[(AggregateOp, Option<Field>)],
    ) -> anyhow::Result<Vec<(Vec<Value>, Vec<Value>)>> {
        let mut select: Vec<String> = group_by
            .iter()
            .map(compile::field_sql)
            .collect::<anyhow::Result<_>>()?;
        for (op, field) in aggregations {
            let expr = field.as_ref().map(compile::field_sql).transpose()?;
            let numeric_int = field
                .as_ref()
                .is_some_and(|f| f.value_type() == ColumnType::Integer);
            select.push(match (op, expr) {
                (AggregateOp::Count, _) | (_, None) => "count(*)".into(),
                (AggregateOp::CountDistinct, Some(e)) => format!("count(DISTINCT {e})"),
                // An integer sum outside 64 bits is empty (as in rollups), not an error.
                (AggregateOp::Sum, Some(e)) if numeric_int => {
                    format!("ct_formula_integer(sum({e}))")
                }
                (AggregateOp::Sum, Some(e)) => format!("sum({e})"),
                (AggregateOp::Avg, Some(e)) => format!("avg({e})::double precision"),
                (AggregateOp::Min, Some(e)) => format!("min({e})"),
                (AggregateOp::Max, Some(e)) => format!("max({e})"),
            });
        }
        let mut qb = self.query(&select.join(", "), selection)?;
        if !group_by.is_empty() {
            let positions: Vec<String> = (1..=group_by.len()).map(|i| i.to_string()).collect();
            qb.push(format!(" GROUP BY {0} ORDER BY {0}", positions.join(", ")));
        }
        qb.push(" LIMIT 1000");
        let rows = qb.build().persistent(false).fetch_all(pool).await?;
        let mut out = Vec::with_capacity(rows.len());
        for row in &rows {
            let mut keys = Vec::with_capacity(group_by.len());
            for (i, field) in group_by.iter().enumerate() {
                keys.push(decode_cell(row, i, field.value_type())?);
            }
            let mut values = Vec::with_capacity(aggregations.len());
            for (j, (op, field)) in aggregations.iter().enumerate() {
                let i = group_by.len() + j;
                let t = match (op, field) {
                    (AggregateOp::Count | AggregateOp::CountDistinct, _) | (_, None) => {
                        ColumnType::Integer
                    }
                    (AggregateOp::Avg, _) => ColumnType::Float,
                    (_, Some(f)) => f.value_type(),
                };
                values.push(decode_cell(row, i, t)?);
            }
            out.push((keys, values));
        }
        Ok(out)
    }

    /// Live records whose cell holds one of `options` (select or multi_select).
    pub async fn option_usage(
        &self,
        pool: &PgPool,
        column: &ColumnDef,
        options: &[String],
    ) -> anyhow::Result<i64> {
        let key = ident(&column.key)?;
        let test = if column.column_type == ColumnType::MultiSelect {
            format!("{key} && $1::text[]")
        } else {
            format!("{key} = ANY($1)")
        };
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {test}",
            table_name(self.table_id)
        );
        Ok(sqlx::query_scalar(&sql)
            .persistent(false)
            .bind(options)
            .fetch_one(pool)
            .await?)
    }

    /// Live records with no value in the column (an empty list counts as none).
    pub async fn empty_count(&self, pool: &PgPool, column: &ColumnDef) -> anyhow::Result<i64> {
        let key = ident(&column.key)?;
        let empty = if matches!(
            column.column_type,
            ColumnType::MultiSelect | ColumnType::Link
        ) {
            format!("{key} IS NULL OR cardinality({key}) = 0")
        } else {
            format!("{key} IS NULL")
        };
        let sql = format!(
            "SELECT count(*) FROM {} WHERE {empty}",
            table_name(self.table_id)
        );
        Ok(sqlx::query_scalar(&sql)
            .persistent(false)
            .fetch_one(pool)
            .await?)
    }

    /// Which of these ids are live records of the table.
    pub async fn existing(&self, pool: &PgPool, ids: &[Uuid]) -> anyhow::Result<Vec<Uuid>> {
        let sql = format!(
            "SELECT id FROM {} WHERE id = ANY($1)",
            table_name(self.table_id)
        );
        Ok(sqlx::query_scalar(&sql)
            .persistent(false)
            .bind(ids)
            .fetch_all(pool)
            .await?)
    }
}
