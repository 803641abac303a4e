//! Which record a caller reads holds an attachment file (the download route's
//! question; `custom_table_blob_holders` answers it for every record).

use super::super::physical::ident;
use super::{Selection, TableHandle};
use domain::tables::column::{ColumnDef, ColumnType};
use serde_json::json;
use sqlx::{PgPool, Postgres, QueryBuilder};

impl TableHandle {
    /// The attachment columns of the handle, by their quoted column names.
    fn attachment_columns(&self) -> anyhow::Result<Vec<String>> {
        self.columns
            .iter()
            .filter(|c: &&ColumnDef| c.column_type == ColumnType::Attachment)
            .map(|c| ident(&c.key).map(|k| format!("t.{k}")))
            .collect()
    }

    /// Pushes `(t.a @> $p OR t.b @> $p ...)`: some attachment cell holds `blob_id`.
    fn push_holds(qb: &mut QueryBuilder<'static, Postgres>, columns: &[String], blob_id: &str) {
        qb.push("(");
        for (i, column) in columns.iter().enumerate() {
            if i > 0 {
                qb.push(" OR ");
            }
            qb.push(format!("{column} @> "));
            qb.push_bind(json!([{ "blob_id": blob_id }]));
        }
        qb.push(")");
    }

    /// The file name a record the selection reads gives `blob_id` in one of the
    /// handle's (visible) attachment columns; `None` when no such record holds it.
    pub async fn blob_name(
        &self,
        pool: &PgPool,
        selection: &Selection,
        blob_id: &str,
    ) -> anyhow::Result<Option<String>> {
        let columns = self.attachment_columns()?;
        if columns.is_empty() {
            return Ok(None);
        }
        let mut qb = QueryBuilder::new("");
        self.push_with(&mut qb)?;
        qb.push("SELECT coalesce(");
        for (i, column) in columns.iter().enumerate() {
            if i > 0 {
                qb.push(", ");
            }
            qb.push(format!(
                "(SELECT e->>'name' FROM jsonb_array_elements({column}) AS e WHERE e->>'blob_id' = "
            ));
            qb.push_bind(blob_id.to_string());
            qb.push(" LIMIT 1)");
        }
        qb.push(")");
        self.push_from(&mut qb, selection)?;
        qb.push(" AND ");
        Self::push_holds(&mut qb, &columns, blob_id);
        qb.push(" LIMIT 1");
        let name: Option<Option<String>> = qb
            .build_query_scalar()
            .persistent(false)
            .fetch_optional(pool)
            .await?;
        Ok(name.flatten())
    }
}
