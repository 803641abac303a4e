//! One representative event of each event type of custom tables and their records,
//! for the registry.

use super::Catalogued;
use crate::tables::column::{ColumnDef, ColumnType};
use crate::tables::grants::{EditMode, Grant, ReadMode, Subject};
use crate::tables::record::{Record, RecordEvent};
use crate::tables::scope::{ScopeKind, ScopeRef};
use crate::tables::table::{CustomTable, MigrationInfo, SortKey, TableEvent, ViewDef};
use crate::tables::trigger::run::{RunCreated, TriggerRun, TriggerRunEvent};
use crate::tables::trigger::{Action, Schedule, Trigger, TriggerEvent};
use serde_json::json;
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const TABLE: Uuid = Uuid::from_u128(0x7001);
const VIEW: Uuid = Uuid::from_u128(0x7101);
const MIGRATION: Uuid = Uuid::from_u128(0x7201);
const CREATOR: &str = "user:00000000-0000-0000-0000-00000000b001";

fn column(column_type: ColumnType) -> ColumnDef {
    ColumnDef::new("col_1", "Size", column_type)
}

fn view(name: &str) -> ViewDef {
    ViewDef {
        id: VIEW,
        name: name.into(),
        filter: Some(json!({"column": "col_2", "op": "eq", "value": "open"})),
        sort: vec![SortKey {
            column: "col_1".into(),
            order: "desc".into(),
        }],
        columns: None,
    }
}

fn migration(background: bool) -> MigrationInfo {
    MigrationInfo {
        migration_id: MIGRATION,
        background,
        estimated_records: 1,
    }
}

impl Catalogued for CustomTable {
    fn examples() -> Vec<TableEvent> {
        use TableEvent::*;
        vec![
            TableCreated {
                table_id: TABLE,
                company_id: COMPANY,
                scope: ScopeRef {
                    kind: ScopeKind::Company,
                    id: COMPANY,
                },
                name: "Orders".into(),
                description: Some("Open orders".into()),
                created_by: CREATOR.into(),
            },
            TableUpdated {
                table_id: TABLE,
                name: "Orders 2026".into(),
                description: None,
            },
            ColumnAdded {
                table_id: TABLE,
                column: column(ColumnType::String),
                fill: Some(json!("7")),
                migration: Some(migration(false)),
            },
            ColumnUpdated {
                table_id: TABLE,
                column: ColumnDef {
                    description: Some("Shoe size".into()),
                    ..column(ColumnType::String)
                },
            },
            ColumnTypeChanged {
                table_id: TABLE,
                from: Box::new(column(ColumnType::String)),
                column: column(ColumnType::Integer),
                migration: migration(true),
            },
            MigrationCompleted {
                table_id: TABLE,
                migration_id: MIGRATION,
            },
            ColumnOptionsRenamed {
                table_id: TABLE,
                key: "col_2".into(),
                renames: [("open".to_string(), "todo".to_string())].into(),
                migration: migration(false),
            },
            ViewCreated {
                table_id: TABLE,
                view: view("Open"),
            },
            ViewUpdated {
                table_id: TABLE,
                view: view("Open first"),
            },
            ViewDeleted {
                table_id: TABLE,
                view_id: VIEW,
            },
            GrantSet {
                table_id: TABLE,
                subject: Subject::Chatroom(Uuid::from_u128(0x51)),
                grant: Grant {
                    can_read: ReadMode::Filtered,
                    can_insert: true,
                    can_edit: EditMode::Own,
                    row_filter: Some(json!({"column": "col_1", "op": "gte", "value": "$today-7d"})),
                    hidden_columns: vec!["col_2".into()],
                    scope_values: vec!["north".into()],
                },
            },
            GrantRevoked {
                table_id: TABLE,
                subject: Subject::Chatroom(Uuid::from_u128(0x51)),
            },
            ClientAccessSet {
                table_id: TABLE,
                enabled: false,
            },
            ClientPassphraseSet {
                table_id: TABLE,
                passphrase_hash: Some(
                    "$argon2id$v=19$m=19456,t=2,p=1$c2FsdHNhbHQ$aGFzaGhhc2hoYXNoaGFzaA".into(),
                ),
            },
            ClientUnlocked {
                table_id: TABLE,
                client_id: Uuid::from_u128(0x52),
            },
            ChannelScopeSet {
                table_id: TABLE,
                column: Some("col_1".into()),
            },
            SettingsSet {
                table_id: TABLE,
                agent_writes_via_commands_only: true,
            },
            TriggersSet {
                table_id: TABLE,
                triggers: vec![Trigger {
                    id: "nightly".into(),
                    name: "Nightly summary".into(),
                    enabled: true,
                    on: None,
                    schedule: Some(Schedule::Cron {
                        expression: "0 2 * * *".into(),
                        timezone: "Europe/Berlin".into(),
                    }),
                    when: None,
                    actions: vec![Action::CreateRecord {
                        table_id: TABLE,
                        values: serde_json::from_value(json!({"col_1": "summary"}))
                            .unwrap_or_default(),
                    }],
                }],
                saved_by: CREATOR.into(),
            },
            RulesSet {
                table_id: TABLE,
                rules: vec![crate::tables::rule::ApprovalRule {
                    id: "big-payouts".into(),
                    label: "Payouts need finance".into(),
                    rule_type: "require_approval".into(),
                    events: vec![crate::tables::rule::RuleEvent::Created],
                    template_id: Uuid::from_u128(0x7702),
                }],
            },
            ColumnDeleted {
                table_id: TABLE,
                key: "col_1".into(),
            },
            TableDeleted { table_id: TABLE },
        ]
    }
}

impl Catalogued for Record {
    fn examples() -> Vec<RecordEvent> {
        vec![
            RecordEvent::RecordCreated {
                record_id: Uuid::from_u128(0x7301),
                table_id: TABLE,
                company_id: COMPANY,
                created_by: CREATOR.into(),
                data: [("col_2".to_string(), json!("open"))].into(),
            },
            RecordEvent::RecordUpdated {
                table_id: TABLE,
                changes: [("col_1".to_string(), json!(9))].into(),
            },
            RecordEvent::RecordDeleted { table_id: TABLE },
        ]
    }
}

impl Catalogued for crate::tables::public_token::PublicReadToken {
    fn examples() -> Vec<crate::tables::public_token::PublicTokenEvent> {
        use crate::tables::public_token::{PublicTokenEvent, PublicTokenTerms};
        let token_id = Uuid::from_u128(0x7301);
        vec![
            PublicTokenEvent::PublicReadTokenMinted(Box::new(PublicTokenTerms {
                token_id,
                company_id: COMPANY,
                table_id: TABLE,
                view_id: VIEW,
                name: Some("open data".into()),
                visible_columns: Some(vec!["col_1".into()]),
                read_filter: Some(json!({"column": "col_1", "op": "gt", "value": 2})),
                allow_query: true,
                rpm: 600,
                secretless: false,
                secret_sha256: Some("5e".repeat(32)),
                valid_until: None,
                created_by: CREATOR.into(),
            })),
            PublicTokenEvent::PublicReadTokenRevoked {
                token_id,
                table_id: TABLE,
            },
        ]
    }
}

impl Catalogued for crate::tables::callback_token::CallbackToken {
    fn examples() -> Vec<crate::tables::callback_token::CallbackTokenEvent> {
        use crate::tables::callback_token::{AllowedOps, CallbackTokenEvent, CallbackTokenTerms};
        let token_id = Uuid::from_u128(0x7401);
        vec![
            CallbackTokenEvent::CallbackTokenMinted(Box::new(CallbackTokenTerms {
                token_id,
                company_id: COMPANY,
                table_id: TABLE,
                name: "crm sync".into(),
                allowed_ops: AllowedOps::CreateUpdate,
                secret_sha256: "5e".repeat(32),
                valid_until: None,
                created_by: CREATOR.into(),
                run_id: None,
                command: None,
            })),
            CallbackTokenEvent::CallbackTokenRevoked {
                token_id,
                table_id: TABLE,
            },
        ]
    }
}

impl Catalogued for crate::tables::callback_delivery::CallbackDelivery {
    fn examples() -> Vec<crate::tables::callback_delivery::DeliveryEvent> {
        use crate::tables::callback_delivery::{CallbackOp, DeliveryEvent};
        let record_id = Uuid::from_u128(0x7302);
        vec![
            DeliveryEvent::CallbackReceived {
                token_id: Uuid::from_u128(0x7401),
                key: "order-1001".into(),
                request_hash: format!("sha256:{}", "0c".repeat(32)),
                op: CallbackOp::Create,
                record_id,
                received_at: "2026-01-02T00:00:30Z".parse().expect("a timestamp"),
            },
            DeliveryEvent::CallbackAnswered { record_id },
            DeliveryEvent::CallbackReleased,
        ]
    }
}

impl Catalogued for TriggerRun {
    fn examples() -> Vec<TriggerRunEvent> {
        let trigger = Trigger {
            id: "on-open".into(),
            name: "Opened".into(),
            enabled: true,
            on: Some(TriggerEvent::Created),
            schedule: None,
            when: Some(json!({"column": "col_1", "op": "eq", "value": "open"})),
            actions: vec![Action::UpdateRecord {
                values: serde_json::from_value(json!({"col_1": "seen"})).unwrap_or_default(),
            }],
        };
        vec![
            TriggerRunEvent::TriggerRunCreated(Box::new(RunCreated {
                run_id: Uuid::from_u128(0x7401),
                company_id: COMPANY,
                table_id: TABLE,
                trigger,
                record_id: Some(Uuid::from_u128(0x7301)),
                window_start: None,
                author: CREATOR.into(),
            })),
            TriggerRunEvent::TriggerRunAwaiting {
                sandbox_run_ids: vec![Uuid::from_u128(0x7501)],
            },
            TriggerRunEvent::TriggerRunSucceeded,
            TriggerRunEvent::TriggerRunFailed {
                error: "action 1: invalid_record_value: column 'Size': expected an integer".into(),
            },
        ]
    }
}

impl Catalogued for crate::tables::command::TableOperation {
    fn examples() -> Vec<crate::tables::command::CommandEvent> {
        use crate::tables::command::{
            Authority, CommandDefinition, CommandEvent, CommandKind, WriteEffect, WriteOp,
        };
        let command_id = Uuid::from_u128(0x7501);
        let definition = |version: i64| CommandDefinition {
            name: format!("add lead v{version}"),
            description: None,
            kind: CommandKind::Write,
            inputs: json!({"type": "object", "properties": {"name": {"type": "string"}},
                           "required": ["name"]}),
            authority: Authority::Definition,
            tag_id: None,
            delivery_reconciliation_ttl_seconds: 900,
            write: Some(WriteEffect {
                op: WriteOp::Upsert,
                values: json!({"col_1": "$input.name"}).as_object().unwrap().clone(),
                match_on: Some(json!({"col_1": "$input.name"}).as_object().unwrap().clone()),
            }),
            query: None,
        };
        vec![
            CommandEvent::CommandDefined {
                command_id,
                company_id: COMPANY,
                table_id: TABLE,
                scope: ScopeRef {
                    kind: ScopeKind::Company,
                    id: COMPANY,
                },
                definition: Box::new(definition(1)),
                version: 1,
                defined_by: CREATOR.into(),
            },
            CommandEvent::CommandRedefined {
                command_id,
                table_id: TABLE,
                definition: Box::new(definition(2)),
                version: 2,
                defined_by: CREATOR.into(),
            },
        ]
    }
}

impl Catalogued for crate::tables::agent_delivery::AgentDelivery {
    fn examples() -> Vec<crate::tables::agent_delivery::DeliveryEvent> {
        use crate::tables::agent_delivery::{DeliveryEvent, DeliveryMarker};
        let marker_id = Uuid::from_u128(0x7601);
        vec![
            DeliveryEvent::DeliveryMarked(Box::new(DeliveryMarker {
                marker_id,
                company_id: COMPANY,
                command_id: Uuid::from_u128(0x7501),
                agent: "social_media_client:00000000-0000-0000-0000-00000000c501".into(),
                key: "delivery-1".into(),
                record_id: Uuid::from_u128(0x7602),
                op: "created".into(),
                expires_at: chrono::DateTime::UNIX_EPOCH + chrono::Duration::days(20_460),
            })),
            DeliveryEvent::DeliveryAcknowledged {
                marker_id,
                reason: "operator".into(),
            },
        ]
    }
}

impl Catalogued for crate::tables::deployment::Deployment {
    fn examples() -> Vec<crate::tables::deployment::DeploymentEvent> {
        use crate::tables::deployment::{DeployedResource, DeploymentEvent};
        use crate::tables::scope::{ScopeKind, ScopeRef};
        let table = Uuid::from_u128(0x7003);
        vec![DeploymentEvent::DeploymentApplied {
            company_id: Uuid::from_u128(0xa001),
            scope: ScopeRef {
                kind: ScopeKind::Company,
                id: Uuid::from_u128(0xa001),
            },
            system: "crm".into(),
            resources: vec![
                DeployedResource {
                    resource_type: "column".into(),
                    reference: "orders.status".into(),
                    resource_id: "col_00aa".into(),
                    table_id: table,
                },
                DeployedResource {
                    resource_type: "table".into(),
                    reference: "orders".into(),
                    resource_id: table.to_string(),
                    table_id: table,
                },
            ],
        }]
    }
}

impl Catalogued for crate::tables::tag::TableTag {
    fn examples() -> Vec<crate::tables::tag::TagEvent> {
        use crate::tables::scope::{ScopeKind, ScopeRef};
        use crate::tables::tag::{TagEvent, TagTerms};
        let tag = Uuid::from_u128(0x7901);
        let table = Uuid::from_u128(0x7003);
        vec![
            TagEvent::TagCreated(Box::new(TagTerms {
                tag_id: tag,
                company_id: Uuid::from_u128(0xa001),
                scope: ScopeRef {
                    kind: ScopeKind::Company,
                    id: Uuid::from_u128(0xa001),
                },
                name: "Finance".into(),
                description: Some("Tables finance reads".into()),
                color: Some("#2266aa".into()),
                system: None,
                created_by: "user:00000000-0000-0000-0000-00000000b001".into(),
            })),
            TagEvent::TagUpdated {
                tag_id: tag,
                name: "Finance".into(),
                description: None,
                color: Some("#22aa66".into()),
            },
            TagEvent::TagAttached {
                tag_id: tag,
                table_id: table,
            },
            TagEvent::TagDetached {
                tag_id: tag,
                table_id: table,
            },
        ]
    }
}

impl Catalogued for crate::tables::import::ImportSession {
    fn examples() -> Vec<crate::tables::import::ImportEvent> {
        use crate::tables::column::ColumnType;
        use crate::tables::import::{Extracted, ImportColumn, ImportEvent};
        let sid = Uuid::from_u128(0x7a01);
        vec![
            ImportEvent::ImportExtracted(Box::new(Extracted {
                sid,
                company_id: Uuid::from_u128(0xa001),
                department_id: Uuid::from_u128(0xd001),
                uploaded_by: "user:00000000-0000-0000-0000-00000000b001".into(),
                file_name: "leads.csv".into(),
                format: "csv".into(),
                sheet: None,
                columns: vec![
                    ImportColumn {
                        index: 0,
                        header: "Name".into(),
                        inferred_type: ColumnType::String,
                    },
                    ImportColumn {
                        index: 1,
                        header: "Qty".into(),
                        inferred_type: ColumnType::Integer,
                    },
                ],
                preview: vec![vec![serde_json::json!("Ada"), serde_json::json!(3)]],
                total_rows: 1,
                rows_key: format!("imports/{}/{sid}.json", Uuid::from_u128(0xa001)),
            })),
            ImportEvent::ImportCompleted {
                table_id: Uuid::from_u128(0x7003),
                imported: 1,
                created_table: false,
            },
        ]
    }
}
