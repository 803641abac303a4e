//! The fields of each row kind of a deployment document ([`super::document::Row`]).

use crate::openapi::enums::string_enum;
use domain::tables::column::{Cardinality, ColumnType};
use domain::tables::grants::{EditMode, ReadMode};
use domain::tables::rule::RuleEvent;
use domain::tables::table::SortKey;
use domain::tables::trigger::{Action, Schedule, TriggerEvent};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::BTreeMap;
use utoipa::ToSchema;
use uuid::Uuid;

/// `kind: table`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentTable)]
pub struct TableDoc {
    /// Unique in the document; the table's identity across applies.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// Display name.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// `settings.agent_writes_via_commands_only`.
    #[serde(default)]
    pub agent_writes_via_commands_only: bool,
    /// Department tables: the internal key of the channel scope column.
    #[serde(default)]
    pub channel_scope_column: Option<String>,
}

/// `kind: column`: a ColumnCreate with its internal key and table references.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentColumn)]
pub struct ColumnDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// Internal key `col_<hex>`: the column's identity in its table.
    pub key: String,
    /// Display name.
    pub name: String,
    /// One of the 19 types.
    #[serde(rename = "type")]
    #[schema(schema_with = string_enum::<ColumnType>)]
    pub column_type: ColumnType,
    /// Required flag.
    #[serde(default)]
    pub required: bool,
    /// Default value (principal columns: an identity token or a tagged cell).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<serde_json::Value>)]
    pub default_value: Option<Value>,
    /// Free text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// String and text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_length: Option<i64>,
    /// select and multi_select.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<String>>,
    /// attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_mime_types: Option<Vec<String>>,
    /// attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_count: Option<i64>,
    /// attachment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_file_bytes: Option<i64>,
    /// link: `$table:<ref>` or a table id of the company.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_table: Option<String>,
    /// link: `one` or `many`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(schema_with = string_enum::<Cardinality>)]
    pub cardinality: Option<Cardinality>,
    /// rollup and lookup: the link column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link_field: Option<String>,
    /// rollup: the aggregation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aggregation: Option<String>,
    /// rollup and lookup: the target column.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_column: Option<String>,
    /// rollup: `outgoing` or `incoming`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub direction: Option<String>,
    /// incoming rollup: `$table:<ref>` or a table id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_table: Option<String>,
    /// incoming rollup: link column pairs.
    #[serde(default, rename = "match", skip_serializing_if = "Option::is_none")]
    pub match_pairs: Option<BTreeMap<String, String>>,
    /// rollup: filter predicates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Vec<Object>>)]
    pub filter: Option<Vec<Value>>,
    /// formula: the expression.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expression: Option<String>,
    /// lookup: `{order_column, direction}`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub pick: Option<Value>,
    /// lookup: `{table_id, match, target_column}`, `table_id` as `$table:<ref>` or
    /// an id.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>)]
    pub fallback: Option<Value>,
}

/// `kind: view`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentView)]
pub struct ViewDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// Display name, unique in the table.
    pub name: String,
    /// Row filter (columns by internal key).
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub filter: Option<Value>,
    /// Sort keys `{column, order}`.
    #[serde(default)]
    #[schema(value_type = Vec<Object>)]
    pub sort: Vec<SortKey>,
    /// Projected columns (internal keys); null means all.
    #[serde(default)]
    pub columns: Option<Vec<String>>,
}

/// `kind: grant`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentGrant)]
pub struct GrantDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// `default`, `$user:<username>`, `$smc:<platform>:<platform_user_id>`,
    /// `$room:<name>` or `$room:<department>/<room>`, `$dept:<name>`, or a raw
    /// `user:<id>`, `smc:<id>`, `room:<id>`, `dept:<id>`.
    pub subject: String,
    /// Rows read.
    #[schema(schema_with = string_enum::<ReadMode>)]
    pub can_read: ReadMode,
    /// Whether records may be created.
    pub can_insert: bool,
    /// Rows edited.
    #[schema(schema_with = string_enum::<EditMode>)]
    pub can_edit: EditMode,
    /// The row policy of `can_read: filtered`.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub row_filter: Option<Value>,
    /// Hidden columns (internal keys).
    #[serde(default)]
    pub hidden_columns: Vec<String>,
    /// Chatroom grants on a governed department table: reachable scope values.
    #[serde(default)]
    pub scope_values: Vec<String>,
}

/// `kind: trigger`: a trigger of the trigger set (`PUT .../triggers`). A
/// cross-table action's `table_id` is a live id (`$table:<ref>` is refused).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentTrigger)]
pub struct TriggerDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// The trigger's id.
    pub id: String,
    /// Display name.
    pub name: String,
    /// Disabled triggers never fire.
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// The record event it fires on.
    #[serde(default)]
    #[schema(value_type = Option<String>)]
    pub on: Option<TriggerEvent>,
    /// Its schedule.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub schedule: Option<Schedule>,
    /// Which records it fires for.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub when: Option<Value>,
    /// What it does.
    #[schema(value_type = Vec<Object>)]
    pub actions: Vec<Action>,
}

fn enabled() -> bool {
    true
}

/// `kind: approval_rule`: its `template_id` is a review template of the company
/// (created by REST first).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentApprovalRule)]
pub struct RuleDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// The rule's id.
    pub id: String,
    /// Shown to writers as `rule_label`.
    pub label: String,
    /// `require_approval`.
    #[serde(rename = "type")]
    pub rule_type: String,
    /// `created`, `updated`.
    #[schema(value_type = Vec<String>)]
    pub events: Vec<RuleEvent>,
    /// The review template.
    pub template_id: Uuid,
}

/// `kind: client_access`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentClientAccess)]
pub struct ClientAccessDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// Whether social media clients reach the table through their grants.
    pub enabled: bool,
    /// Whether they give a passphrase first.
    #[serde(default)]
    pub passphrase_enabled: bool,
    /// The passphrase, or the redacted marker export writes ([`REDACTED`]): in
    /// the scope that has a passphrase it keeps it; turning the passphrase on
    /// where none is stored needs a real one.
    #[serde(default)]
    pub passphrase: Option<String>,
}

/// What export writes in place of a client-access passphrase.
pub const REDACTED: &str = "<redacted>";

/// `kind: system_tag`: the tag of the scope that marks the system's tables (at
/// most one per document; other tags are REST-only).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentSystemTag)]
pub struct SystemTagDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// Name, unique among the scope's tags.
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// `#rrggbb`.
    #[serde(default)]
    pub color: Option<String>,
}

/// `kind: command`: a Command of a table (`POST {scope_mount}/commands`); its
/// `tag_id` is a raw tag id of the same scope. A Command cannot be deleted: one the
/// document no longer holds stays as it is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentCommand)]
pub struct CommandDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// Display name (unique among the table's Commands in a document's scope).
    pub name: String,
    /// Free text.
    #[serde(default)]
    pub description: Option<String>,
    /// `write` or `query` (the REST payload's `kind`).
    #[schema(value_type = String)]
    pub command_kind: domain::tables::command::CommandKind,
    /// The inputs' JSON Schema.
    #[schema(value_type = Object)]
    pub inputs: Value,
    /// `caller` or `definition`.
    #[schema(value_type = String)]
    pub authority: domain::tables::command::Authority,
    /// A tag of the scope.
    #[serde(default)]
    pub tag_id: Option<Uuid>,
    /// Agent delivery reconciliation, 60..604800 seconds (default 900).
    #[serde(default = "default_ttl")]
    pub delivery_reconciliation_ttl_seconds: i64,
    /// Write Commands: the effect.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub write: Option<Value>,
    /// Query Commands: the search body.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub query: Option<Value>,
}

fn default_ttl() -> i64 {
    domain::tables::command::DEFAULT_RECONCILIATION_TTL_SECONDS
}

/// `kind: public_read_token`: a secretless public read token of a view (tokens
/// with a secret are minted by REST). Its id, the capability, is never written;
/// a changed token is revoked and minted again under a new id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
#[schema(as = DeploymentPublicReadToken)]
pub struct TokenDoc {
    /// Unique in the document.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The system that manages it.
    pub system: String,
    /// The table's ref.
    pub table: String,
    /// The ref of the published view (a view row of the same table).
    pub view: String,
    /// Label.
    #[serde(default)]
    pub name: Option<String>,
    /// Column allowlist (internal keys).
    #[serde(default)]
    pub visible_columns: Option<Vec<String>>,
    /// Row policy ANDed onto the view's filter.
    #[serde(default)]
    #[schema(value_type = Option<Object>)]
    pub read_filter: Option<Value>,
    /// Whether `POST .../query` answers.
    #[serde(default)]
    pub allow_query: bool,
    /// Requests per minute (default 60).
    #[serde(default = "default_rpm")]
    pub rpm: i64,
    /// Expiry.
    #[serde(default)]
    pub valid_until: Option<chrono::DateTime<chrono::Utc>>,
}

fn default_rpm() -> i64 {
    crate::routes::tables::public_tokens::DEFAULT_RPM
}
