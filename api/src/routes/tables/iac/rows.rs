//! A table's resources as document rows: what export writes, and what plan compares
//! a document with (the same conversion with ids in place of refs and tokens).

use super::document::{
    ClientAccessDoc, ColumnDoc, CommandDoc, GrantDoc, REDACTED, Row, RuleDoc, TABLE_REF, TableDoc,
    TokenDoc, TriggerDoc, ViewDoc,
};
use crate::routes::tables::column_schema::ColumnResponse;
use chrono::Utc;
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::command::CommandDefinition;
use domain::tables::deployment::Deployment;
use domain::tables::grants::Subject;
use domain::tables::table::CustomTable;
use projections::read_models::public_tokens::query::PublicTokenRow;
use projections::read_models::table_commands::query::CommandRow;
use serde_json::Value;
use std::collections::{HashMap, HashSet};
use uuid::Uuid;

/// How rows name what lies outside them: other tables, principals, themselves.
pub struct Naming<'a> {
    /// The system written into every row.
    pub system: &'a str,
    /// A table referenced by a column (`$table:<ref>` or its id).
    pub table: &'a dyn Fn(Uuid) -> String,
    /// A tagged `principal` cell (a token or the cell).
    pub cell: &'a dyn Fn(&str) -> String,
    /// A grant's subject (a token or a raw tagged id).
    pub subject: &'a dyn Fn(Subject) -> String,
    /// The ref of a resource: `(resource_type, table_id, resource_id, derived)`.
    pub reference: &'a dyn Fn(&str, Uuid, &str, String) -> String,
    /// A row policy or filter of a table with these columns (principal operands as
    /// tokens).
    pub filter: &'a dyn Fn(&Value, &[ColumnDef]) -> Value,
}

/// The raw tagged form of a subject: the deployment's resource id of a grant.
pub fn subject_key(subject: Subject) -> String {
    match subject {
        Subject::Default => "default".into(),
        Subject::User(id) => format!("user:{id}"),
        Subject::SocialClient(id) => format!("smc:{id}"),
        Subject::Chatroom(id) => format!("room:{id}"),
        Subject::Department(id) => format!("dept:{id}"),
    }
}

/// A ref derived from a name: lowercase letters, digits and `-`.
pub fn slug(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars().flat_map(char::to_lowercase) {
        if c.is_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('-') {
            out.push('-');
        }
    }
    let out = out.trim_matches('-').to_string();
    if out.is_empty() { "table".into() } else { out }
}

/// The refs of a scope's tables: the deployment's for managed tables, a slug of
/// the name (made unique) for the others.
pub fn table_refs(tables: &[CustomTable], deployment: &Deployment) -> HashMap<Uuid, String> {
    let mut refs = HashMap::new();
    let mut used: HashSet<String> = HashSet::new();
    for table in tables {
        let Some(id) = table.table_id else { continue };
        if let Some(r) = deployment
            .resources
            .iter()
            .find(|r| r.resource_type == "table" && r.table_id == id)
        {
            used.insert(r.reference.clone());
            refs.insert(id, r.reference.clone());
        }
    }
    for table in tables {
        let Some(id) = table.table_id else { continue };
        if refs.contains_key(&id) {
            continue;
        }
        let base = slug(&table.name);
        let mut candidate = base.clone();
        let mut n = 2;
        while used.contains(&candidate) {
            candidate = format!("{base}-{n}");
            n += 1;
        }
        used.insert(candidate.clone());
        refs.insert(id, candidate);
    }
    refs
}

/// A table reference as a document writes it.
pub fn table_reference(refs: &HashMap<Uuid, String>, id: Uuid) -> String {
    refs.get(&id)
        .map(|r| format!("{TABLE_REF}{r}"))
        .unwrap_or_else(|| id.to_string())
}

/// The rows of one table, in order: the table, its columns, views, grants,
/// triggers, rules, Commands and client access.
pub fn table_rows(
    table: &CustomTable,
    commands: &[CommandRow],
    tokens: &[PublicTokenRow],
    table_ref: &str,
    naming: &Naming,
) -> Vec<Row> {
    let Some(id) = table.table_id else {
        return Vec::new();
    };
    let system = naming.system.to_string();
    let reference = |kind: &str, resource: &str, derived: String| {
        (naming.reference)(kind, id, resource, derived)
    };
    let mut rows = vec![Row::Table(TableDoc {
        reference: table_ref.to_string(),
        system: system.clone(),
        name: table.name.clone(),
        description: table.description.clone(),
        agent_writes_via_commands_only: table.agent_writes_via_commands_only,
        channel_scope_column: table.channel_scope_column.clone(),
    })];
    for column in &table.columns {
        let r = reference("column", &column.key, format!("{table_ref}.{}", column.key));
        rows.push(Row::Column(Box::new(column_doc(
            column,
            &table.columns,
            table_ref,
            r,
            naming,
        ))));
    }
    let view_ref = |view: &domain::tables::table::ViewDef| {
        reference(
            "view",
            &view.id.to_string(),
            format!("{table_ref}.view.{}", slug(&view.name)),
        )
    };
    for view in &table.views {
        let r = view_ref(view);
        rows.push(Row::View(ViewDoc {
            reference: r,
            system: system.clone(),
            table: table_ref.to_string(),
            name: view.name.clone(),
            filter: view
                .filter
                .as_ref()
                .map(|f| (naming.filter)(f, &table.columns)),
            sort: view.sort.clone(),
            columns: view.columns.clone(),
        }));
    }
    for (subject, grant) in &table.grants {
        let key = subject_key(*subject);
        let r = reference(
            "grant",
            &key,
            format!("{table_ref}.grant.{}", key.replace(':', "-")),
        );
        rows.push(Row::Grant(GrantDoc {
            reference: r,
            system: system.clone(),
            table: table_ref.to_string(),
            subject: (naming.subject)(*subject),
            can_read: grant.can_read,
            can_insert: grant.can_insert,
            can_edit: grant.can_edit,
            row_filter: grant
                .row_filter
                .as_ref()
                .map(|f| (naming.filter)(f, &table.columns)),
            hidden_columns: grant.hidden_columns.clone(),
            scope_values: grant.scope_values.clone(),
        }));
    }
    for trigger in &table.triggers {
        let r = reference(
            "trigger",
            &trigger.id,
            format!("{table_ref}.trigger.{}", trigger.id),
        );
        rows.push(Row::Trigger(TriggerDoc {
            reference: r,
            system: system.clone(),
            table: table_ref.to_string(),
            id: trigger.id.clone(),
            name: trigger.name.clone(),
            enabled: trigger.enabled,
            on: trigger.on,
            schedule: trigger.schedule.clone(),
            when: trigger
                .when
                .as_ref()
                .map(|f| (naming.filter)(f, &table.columns)),
            actions: trigger.actions.clone(),
        }));
    }
    for rule in &table.rules {
        let r = reference(
            "approval_rule",
            &rule.id,
            format!("{table_ref}.rule.{}", rule.id),
        );
        rows.push(Row::ApprovalRule(RuleDoc {
            reference: r,
            system: system.clone(),
            table: table_ref.to_string(),
            id: rule.id.clone(),
            label: rule.label.clone(),
            rule_type: rule.rule_type.clone(),
            events: rule.events.clone(),
            template_id: rule.template_id,
        }));
    }
    for command in commands.iter().filter(|c| c.table_id == id) {
        let r = reference(
            "command",
            &command.id.to_string(),
            format!("{table_ref}.command.{}", slug(&command.definition.name)),
        );
        rows.push(Row::Command(Box::new(command_doc(
            &command.definition,
            table_ref,
            r,
            naming.system,
        ))));
    }
    let published = tokens
        .iter()
        .filter(|t| t.table_id == id && t.secretless && !t.revoked);
    for (n, token) in published.enumerate() {
        let Some(view) = table.views.iter().find(|v| v.id == token.view_id) else {
            continue;
        };
        let derived = format!(
            "{table_ref}.token.{}",
            token
                .name
                .as_deref()
                .map_or_else(|| (n + 1).to_string(), slug)
        );
        rows.push(Row::PublicReadToken(Box::new(TokenDoc {
            reference: reference("public_read_token", &token.id.to_string(), derived),
            system: system.clone(),
            table: table_ref.to_string(),
            view: view_ref(view),
            name: token.name.clone(),
            visible_columns: token.visible_columns.clone(),
            read_filter: token
                .read_filter
                .as_ref()
                .map(|f| (naming.filter)(&f.0, &table.columns)),
            allow_query: token.allow_query,
            rpm: token.rpm,
            valid_until: token.valid_until,
        })));
    }
    rows.push(Row::ClientAccess(ClientAccessDoc {
        reference: reference(
            "client_access",
            "client_access",
            format!("{table_ref}.client_access"),
        ),
        system,
        table: table_ref.to_string(),
        enabled: !table.clients_refused,
        passphrase_enabled: table.client_passphrase.is_some(),
        passphrase: Some(REDACTED.into()),
    }));
    rows
}

/// A column as a document row.
pub fn column_doc(
    column: &ColumnDef,
    columns: &[ColumnDef],
    table_ref: &str,
    reference: String,
    naming: &Naming,
) -> ColumnDoc {
    let now = Utc::now();
    let r = ColumnResponse::of(column, columns, now, now);
    let default_value = match (&r.default_value, column.column_type) {
        (Some(Value::String(cell)), ColumnType::Principal) => {
            Some(Value::String((naming.cell)(cell)))
        }
        (other, _) => other.clone(),
    };
    let fallback = r.fallback.map(|mut f| {
        if let Some(id) = f
            .get("table_id")
            .and_then(Value::as_str)
            .and_then(|s| s.parse::<Uuid>().ok())
        {
            f["table_id"] = Value::String((naming.table)(id));
        }
        f
    });
    ColumnDoc {
        reference,
        system: naming.system.to_string(),
        table: table_ref.to_string(),
        key: r.id,
        name: r.name,
        column_type: column.column_type,
        required: r.required,
        default_value,
        description: r.description,
        max_length: r.max_length,
        options: r.options,
        allowed_mime_types: r.allowed_mime_types,
        max_count: r.max_count,
        max_file_bytes: r.max_file_bytes,
        target_table: r.target_table_id.map(|id| (naming.table)(id)),
        cardinality: column.cardinality,
        link_field: r.link_field,
        aggregation: r.aggregation,
        target_column: r.target_column,
        direction: r.direction,
        source_table: r.source_table_id.map(|id| (naming.table)(id)),
        match_pairs: r.match_pairs,
        filter: r.filter,
        expression: r.expression,
        pick: r.pick,
        fallback,
    }
}

/// A Command's definition as a document row.
pub fn command_doc(
    definition: &CommandDefinition,
    table_ref: &str,
    reference: String,
    system: &str,
) -> CommandDoc {
    CommandDoc {
        reference,
        system: system.to_string(),
        table: table_ref.to_string(),
        name: definition.name.clone(),
        description: definition.description.clone(),
        command_kind: definition.kind,
        inputs: definition.inputs.clone(),
        authority: definition.authority,
        tag_id: definition.tag_id,
        delivery_reconciliation_ttl_seconds: definition.delivery_reconciliation_ttl_seconds,
        write: definition
            .write
            .as_ref()
            .and_then(|w| serde_json::to_value(w).ok()),
        query: definition.query.clone(),
    }
}
