//! One representative event of each event type of tasks and task versions, for the
//! registry.

use super::Catalogued;
use crate::environments::environment::OwnerScope;
use crate::tasks::contents::{SlotDeclaration, VersionContents};
use crate::tasks::task::{Task, TaskCreated, TaskEvent};
use crate::tasks::version::{TaskVersion, TaskVersionDrafted, TaskVersionEvent};
use serde_json::json;
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const TASK: Uuid = Uuid::from_u128(0xf1001);
const VERSION: Uuid = Uuid::from_u128(0xf2001);
const ENVIRONMENT_VERSION: Uuid = Uuid::from_u128(0xe2001);

fn contents(work_script: &str) -> VersionContents {
    VersionContents {
        environment_version_id: ENVIRONMENT_VERSION,
        startup_script: "set -e\n".into(),
        work_script: work_script.into(),
        ordinary_env: [("MODE".to_string(), "fast".to_string())].into(),
        input_instructions: Some("send a number".into()),
        input_example: Some(json!({"n": 3})),
        input_schema: Some(json!({"type": "object", "properties": {"n": {"type": "integer"}}})),
        work_command: None,
        timeout_seconds: 1800,
        secret_slot_declarations: vec![SlotDeclaration {
            name: "API_TOKEN".into(),
        }],
        requires_confirmation: false,
        output_policy: None,
        bundle: None,
    }
}

impl Catalogued for Task {
    fn examples() -> Vec<TaskEvent> {
        vec![
            TaskEvent::TaskCreated(TaskCreated {
                task_id: TASK,
                company_id: COMPANY,
                owner_scope: OwnerScope::Company,
                owner_id: COMPANY,
                name: "report".into(),
                description: "Weekly report".into(),
                agent_enabled: false,
                hidden: false,
            }),
            TaskEvent::TaskVersionNumberAllocated {
                version_id: VERSION,
                version_number: 1,
            },
            TaskEvent::TaskUpdated {
                name: "weekly report".into(),
                description: "Weekly report".into(),
                agent_enabled: true,
            },
            TaskEvent::TaskArchived,
        ]
    }
}

impl Catalogued for TaskVersion {
    fn examples() -> Vec<TaskVersionEvent> {
        let published = contents("echo 2 > \"$SERVICE_OUTPUT_FILE\"\n");
        vec![
            TaskVersionEvent::TaskVersionDrafted(TaskVersionDrafted {
                version_id: VERSION,
                task_id: TASK,
                company_id: COMPANY,
                version_number: 1,
                contents: contents("echo 1 > \"$SERVICE_OUTPUT_FILE\"\n"),
            }),
            TaskVersionEvent::TaskVersionEdited {
                contents: published.clone(),
            },
            TaskVersionEvent::TaskVersionPublished {
                canonical_digest: published.canonical_digest(),
                content_hash: published.content_hash(),
            },
            TaskVersionEvent::TaskVersionArchived,
            TaskVersionEvent::TaskVersionScrubbed {
                canonical_digest: format!("sha256:{}", "ab".repeat(32)),
                content_hash: format!("sha256:{}", "cd".repeat(32)),
                reason: "the owner asked to remove a leaked credential".into(),
            },
        ]
    }
}
