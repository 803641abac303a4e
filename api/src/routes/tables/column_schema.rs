//! Request and response bodies of the column routes (spec section 2: ColumnCreate,
//! ColumnResponse, ColumnCreateResponse, ColumnPreviewResponse, ColumnUpdate).

use crate::openapi::enums::string_enum;
use chrono::{DateTime, Utc};
use domain::tables::column::computed::{Fallback, FallbackValue};
use domain::tables::column::{Cardinality, ColumnChanges, ColumnDef, ColumnSpec, ColumnType};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use utoipa::ToSchema;
use uuid::Uuid;

/// `ColumnCreate`: the body of column create and preview.
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ColumnCreate {
    /// Display name, unique in the table; non-ASCII allowed.
    #[schema(schema_with = crate::openapi::shapes::column_name)]
    pub name: String,
    /// One of the 19 types.
    #[serde(rename = "type")]
    #[schema(schema_with = string_enum::<ColumnType>, example = "string")]
    pub column_type: ColumnType,
    /// Not allowed for computed columns.
    pub required: Option<bool>,
    /// String, integer, number, boolean or null; applied to existing rows.
    #[schema(value_type = Option<Object>)]
    pub default_value: Option<Value>,
    /// Free text.
    pub description: Option<String>,
    /// String and text only.
    pub max_length: Option<i64>,
    /// select and multi_select: 1-50 unique options of 1-64 characters.
    pub options: Option<Vec<String>>,
    /// attachment: empty or null means any.
    pub allowed_mime_types: Option<Vec<String>>,
    /// attachment: files per cell.
    pub max_count: Option<i64>,
    /// attachment: bytes per file, at most 5 GiB.
    pub max_file_bytes: Option<i64>,
    /// link: the target table.
    pub target_table_id: Option<Uuid>,
    /// link: `one` or `many` (default); immutable.
    #[schema(schema_with = string_enum::<Cardinality>)]
    pub cardinality: Option<Cardinality>,
    /// rollup and lookup: the link column.
    pub link_field: Option<String>,
    /// rollup: count, count_distinct, sum, avg, min, max.
    pub aggregation: Option<String>,
    /// rollup and lookup: the target column.
    pub target_column: Option<String>,
    /// rollup: outgoing or incoming.
    pub direction: Option<String>,
    /// rollup incoming: the source table.
    pub source_table_id: Option<String>,
    /// rollup incoming: link column pairs.
    #[serde(rename = "match")]
    pub match_pairs: Option<BTreeMap<String, String>>,
    /// rollup: filter predicates.
    #[schema(value_type = Option<Vec<Object>>)]
    pub filter: Option<Vec<Value>>,
    /// formula: the expression.
    pub expression: Option<String>,
    /// lookup: `{order_column, direction}`.
    #[schema(value_type = Option<Object>)]
    pub pick: Option<Value>,
    /// lookup: defaults-table fallback.
    #[schema(value_type = Option<Object>)]
    pub fallback: Option<Value>,
}

impl ColumnCreate {
    /// A column with only a name and a type (an import's new columns).
    pub fn typed(name: String, column_type: ColumnType) -> Self {
        Self {
            name,
            column_type,
            required: None,
            default_value: None,
            description: None,
            max_length: None,
            options: None,
            allowed_mime_types: None,
            max_count: None,
            max_file_bytes: None,
            target_table_id: None,
            cardinality: None,
            link_field: None,
            aggregation: None,
            target_column: None,
            direction: None,
            source_table_id: None,
            match_pairs: None,
            filter: None,
            expression: None,
            pick: None,
            fallback: None,
        }
    }

    /// The other table the column names: a link's target, or an incoming rollup's
    /// source table.
    pub fn linked_table(&self) -> Option<Uuid> {
        self.target_table_id.or_else(|| {
            self.source_table_id
                .as_deref()
                .and_then(|id| id.parse().ok())
        })
    }

    /// The domain form.
    pub fn spec(&self) -> ColumnSpec {
        let mut computed = BTreeMap::new();
        let fields: [(&'static str, Option<Value>); 10] = [
            ("link_field", self.link_field.clone().map(Value::String)),
            ("aggregation", self.aggregation.clone().map(Value::String)),
            (
                "target_column",
                self.target_column.clone().map(Value::String),
            ),
            ("direction", self.direction.clone().map(Value::String)),
            (
                "source_table_id",
                self.source_table_id.clone().map(Value::String),
            ),
            (
                "match",
                self.match_pairs
                    .as_ref()
                    .map(|m| serde_json::to_value(m).unwrap_or(Value::Null)),
            ),
            ("filter", self.filter.clone().map(Value::Array)),
            ("expression", self.expression.clone().map(Value::String)),
            ("pick", self.pick.clone()),
            ("fallback", self.fallback.clone()),
        ];
        for (name, value) in fields {
            if let Some(value) = value.filter(|v| !v.is_null()) {
                computed.insert(name, value);
            }
        }
        ColumnSpec {
            name: self.name.clone(),
            column_type: Some(self.column_type),
            required: self.required,
            default_value: self.default_value.clone(),
            description: self.description.clone(),
            max_length: self.max_length,
            options: self.options.clone(),
            allowed_mime_types: self.allowed_mime_types.clone(),
            max_count: self.max_count,
            max_file_bytes: self.max_file_bytes,
            target_table_id: self.target_table_id,
            cardinality: self.cardinality,
            computed_fields: computed,
        }
    }
}

/// `ColumnUpdate` (PATCH and the deprecated company-scope PUT).
#[derive(Debug, Clone, Default, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ColumnUpdate {
    /// New default (null clears).
    #[serde(default, deserialize_with = "crate::extract::double_option")]
    #[schema(value_type = Option<Object>)]
    pub default_value: Option<Option<Value>>,
    /// New description (null clears).
    #[serde(default, deserialize_with = "crate::extract::double_option")]
    pub description: Option<Option<String>>,
    /// New max length (null clears).
    #[serde(default, deserialize_with = "crate::extract::double_option")]
    pub max_length: Option<Option<i64>>,
    /// New display name.
    pub name: Option<String>,
    /// New required flag.
    pub required: Option<bool>,
    /// New type: every row's data migrates.
    #[serde(rename = "type")]
    #[schema(schema_with = string_enum::<ColumnType>)]
    pub column_type: Option<ColumnType>,
    /// New option list (select, multi_select).
    pub options: Option<Vec<String>>,
    /// Old option to new; rewrites every live cell; not with `options`.
    pub option_renames: Option<BTreeMap<String, String>>,
}

impl ColumnUpdate {
    /// The domain form.
    pub fn changes(&self) -> ColumnChanges {
        ColumnChanges {
            name: self.name.clone(),
            description: self.description.clone(),
            required: self.required,
            default_value: self.default_value.clone(),
            max_length: self.max_length,
            column_type: self.column_type,
            options: self.options.clone(),
            option_renames: self.option_renames.clone(),
        }
    }
}

/// `ColumnResponse`.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct ColumnResponse {
    /// Internal key `col_<hex>`.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Type.
    #[serde(rename = "type")]
    pub column_type: String,
    /// Required flag.
    pub required: bool,
    /// Default value.
    #[schema(value_type = Option<Object>)]
    pub default_value: Option<Value>,
    /// Free text.
    pub description: Option<String>,
    /// Max length.
    pub max_length: Option<i64>,
    /// Link target.
    pub target_table_id: Option<Uuid>,
    /// Link cardinality.
    pub cardinality: Option<String>,
    /// Rollup direction.
    pub direction: Option<String>,
    /// Rollup source table.
    pub source_table_id: Option<Uuid>,
    /// Rollup or lookup link column.
    pub link_field: Option<String>,
    /// Rollup aggregation.
    pub aggregation: Option<String>,
    /// Rollup or lookup target column.
    pub target_column: Option<String>,
    /// Rollup match pairs.
    #[serde(rename = "match")]
    pub match_pairs: Option<BTreeMap<String, String>>,
    /// Rollup filter.
    #[schema(value_type = Option<Vec<Object>>)]
    pub filter: Option<Vec<Value>>,
    /// Formula expression.
    pub expression: Option<String>,
    /// Lookup pick: `{order_column, direction}` (order column by internal key).
    #[schema(value_type = Option<Object>)]
    pub pick: Option<Value>,
    /// Lookup fallback: `{table_id, match, target_column}` (columns by internal key,
    /// `$row.<key>` for this table's columns).
    #[schema(value_type = Option<Object>)]
    pub fallback: Option<Value>,
    /// Select options.
    pub options: Option<Vec<String>>,
    /// Attachment MIME types.
    pub allowed_mime_types: Option<Vec<String>>,
    /// Attachment files per cell.
    pub max_count: Option<i64>,
    /// Attachment bytes per file.
    pub max_file_bytes: Option<i64>,
    /// Whether the caller cannot read what the column reads (always false for
    /// stored columns).
    pub restricted: bool,
    /// Creation time.
    pub created_at: DateTime<Utc>,
    /// Last change.
    pub updated_at: DateTime<Utc>,
}

impl ColumnResponse {
    /// The response form of a column of a table with these columns (a formula
    /// names the columns it reads by their current display names).
    pub fn of(
        c: &ColumnDef,
        columns: &[ColumnDef],
        created_at: DateTime<Utc>,
        updated_at: DateTime<Utc>,
    ) -> Self {
        Self {
            id: c.key.clone(),
            name: c.name.clone(),
            column_type: c.column_type.as_str().into(),
            required: c.required,
            default_value: c.default_value.clone(),
            description: c.description.clone(),
            max_length: c.max_length,
            target_table_id: c.target_table_id,
            cardinality: c.cardinality.map(|k| match k {
                Cardinality::One => "one".into(),
                Cardinality::Many => "many".into(),
            }),
            direction: c.rollup.as_ref().map(|r| {
                if r.incoming.is_some() {
                    "incoming"
                } else {
                    "outgoing"
                }
                .into()
            }),
            source_table_id: c
                .rollup
                .as_ref()
                .filter(|r| r.incoming.is_some())
                .map(|r| r.target_table),
            link_field: c
                .rollup
                .as_ref()
                .and_then(|r| r.link_field.clone())
                .or_else(|| c.lookup.as_ref().map(|l| l.link_field.clone())),
            aggregation: c.rollup.as_ref().map(|r| r.aggregation.as_str().into()),
            target_column: c
                .rollup
                .as_ref()
                .and_then(|r| r.target_column.as_ref().map(|t| t.0.clone()))
                .or_else(|| c.lookup.as_ref().map(|l| l.target_column.0.clone())),
            match_pairs: c
                .rollup
                .as_ref()
                .and_then(|r| r.incoming.as_ref())
                .map(|pairs| {
                    pairs
                        .iter()
                        .map(|p| {
                            (
                                p.source.clone(),
                                p.mine.clone().unwrap_or_else(|| "$self".into()),
                            )
                        })
                        .collect()
                }),
            filter: c.rollup.as_ref().and_then(|r| r.filter.clone()),
            expression: c.formula.as_ref().map(|f| f.expr.render(columns)),
            pick: c.lookup.as_ref().and_then(|l| l.pick.as_ref()).map(|p| {
                json!({
                    "order_column": p.order_column.0,
                    "direction": if p.descending { "desc" } else { "asc" },
                })
            }),
            fallback: c
                .lookup
                .as_ref()
                .and_then(|l| l.fallback.as_ref())
                .map(fallback_response),
            options: c.options.clone(),
            allowed_mime_types: c.allowed_mime_types.clone(),
            max_count: c.max_count,
            max_file_bytes: c.max_file_bytes,
            restricted: false,
            created_at,
            updated_at,
        }
    }
}

/// A lookup's fallback as responses show it.
fn fallback_response(fallback: &Fallback) -> Value {
    let pairs: Map<String, Value> = fallback
        .pairs
        .iter()
        .map(|p| {
            let value = match &p.value {
                FallbackValue::Row(key) => Value::String(format!("$row.{key}")),
                FallbackValue::Literal(value) => value.clone(),
            };
            (p.column.0.clone(), value)
        })
        .collect();
    json!({
        "table_id": fallback.table,
        "match": pairs,
        "target_column": fallback.target_column.0,
    })
}

/// The data migration a column change caused.
#[derive(Debug, Clone, Serialize, ToSchema)]
pub struct MigrationInfoResponse {
    /// Whether the rows migrate in the background (large tables).
    pub background_migration: bool,
    /// Poll `GET /{scopeName}/migrations/{migration_id}/status`.
    pub migration_id: Option<Uuid>,
    /// Rows rewritten (null while a background migration runs).
    pub records_migrated: Option<i64>,
    /// Live records when it started.
    pub estimated_records: i64,
    /// Whether a default value was written into existing rows.
    pub default_value_applied: bool,
    /// What happened.
    pub message: String,
    /// The conversion rule or other detail.
    pub note: Option<String>,
}

/// `ColumnCreateResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ColumnCreateResponse {
    /// The column.
    pub column: ColumnResponse,
    /// The data migration (required).
    pub migration_info: MigrationInfoResponse,
}

/// `ColumnUpdateResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ColumnUpdateResponse {
    /// The column.
    pub column: ColumnResponse,
    /// Present only if the type changed or a migration rewrote rows.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub migration_info: Option<MigrationInfoResponse>,
}

/// `ColumnPreviewError`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ColumnPreviewError {
    /// Stable code (as the create route would answer).
    pub code: String,
    /// What is wrong.
    pub message: String,
}

/// `ColumnPreviewSample`: the value the column would hold for an existing record.
#[derive(Debug, Serialize, ToSchema)]
pub struct ColumnPreviewSample {
    /// The record.
    pub record_id: Uuid,
    /// Its value after the column is added.
    #[schema(value_type = Option<Object>)]
    pub value: Value,
}

/// `ColumnPreviewResponse`.
#[derive(Debug, Serialize, ToSchema)]
pub struct ColumnPreviewResponse {
    /// Whether the create would be accepted.
    pub valid: bool,
    /// Why not.
    pub errors: Vec<ColumnPreviewError>,
    /// Advice.
    pub hint: Option<String>,
    /// The configuration with resolved references.
    #[schema(value_type = Option<Object>)]
    pub normalized: Option<Value>,
    /// Values for the first 5 records.
    pub sample: Vec<ColumnPreviewSample>,
}
