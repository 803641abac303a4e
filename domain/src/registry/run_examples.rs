//! One representative event of each event type of runs and public links, for the
//! registry.

use super::Catalogued;
use crate::principal::{AuthMethod, PrincipalType};
use crate::runs::link::{LinkEvent, LinkedObject, PublicLink};
use crate::runs::run::{
    Artifact, Run, RunEnded, RunEvent, RunSubmitted, StoredObject, SubmissionSource, TerminalClass,
};
use crate::secrets::ConsumerScope;
use crate::secrets::resolve::{ResolvedVia, SlotSource};
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const ROOM: Uuid = Uuid::from_u128(0xc001);
const USER: Uuid = Uuid::from_u128(0xb001);
const TASK: Uuid = Uuid::from_u128(0xf1001);
const VERSION: Uuid = Uuid::from_u128(0xf2001);
const RUN: Uuid = Uuid::from_u128(0xd1001);
const ARTIFACT: Uuid = Uuid::from_u128(0xd2001);

fn object(key: &str, size: i64) -> StoredObject {
    StoredObject {
        key: key.into(),
        byte_size: size,
        digest: format!("sha256:{}", "cd".repeat(32)),
    }
}

impl Catalogued for Run {
    fn examples() -> Vec<RunEvent> {
        vec![
            RunEvent::RunSubmitted(Box::new(RunSubmitted {
                run_id: RUN,
                company_id: COMPANY,
                chatroom_id: ROOM,
                task_id: TASK,
                task_version_id: VERSION,
                share_grant_id: Some(Uuid::from_u128(0x5a001)),
                principal_type: PrincipalType::User,
                principal_id: USER,
                auth_method: AuthMethod::Jwt,
                api_key_id: None,
                submission_source: SubmissionSource::Rest,
                input_digest: format!("sha256:{}", "ab".repeat(32)),
                input: object("runs/inputs/a001/ab.json", 7),
                timeout_seconds: 1800,
                resource_profile: "standard".into(),
                retry_of_run_id: None,
                request_hash: format!("sha256:{}", "ef".repeat(32)),
                slot_sources: Some(
                    [(
                        "API_TOKEN".to_string(),
                        SlotSource {
                            resolved_via: ResolvedVia::Owner,
                            consumer_scope: ConsumerScope::Company,
                            consumer_id: COMPANY,
                            value_version_id: Uuid::from_u128(0x5e001),
                        },
                    )]
                    .into(),
                ),
                hold: Some(crate::pricing::BudgetHold {
                    currency: "USD".into(),
                    rate: 2_280,
                    amount_micros: 4_008,
                }),
            })),
            RunEvent::RunClaimed {
                worker_id: "executor-host-1-0a1b2c3d".into(),
            },
            RunEvent::RunStarted,
            RunEvent::RunReattached {
                worker_id: "executor-host-2-4e5f6a7b".into(),
            },
            RunEvent::RunCancelRequested,
            RunEvent::RunFinished(Box::new(RunEnded {
                terminal_class: TerminalClass::Completed,
                error_code: None,
                exit_code: Some(0),
                log: Some(object("runs/a001/d1001/log", 120)),
                output: Some(object("runs/a001/d1001/output", 11)),
                bundle: Some(object("runs/a001/d1001/artifacts", 13)),
                artifacts: vec![Artifact {
                    artifact_id: ARTIFACT,
                    relative_path: "sub/table.csv".into(),
                    offset: 0,
                    byte_size: 13,
                    digest: format!("sha256:{}", "12".repeat(32)),
                    declared_content_type: "text/csv".into(),
                }],
            })),
            RunEvent::RunContentExpiring {
                expires_at: "2026-02-05T00:00:13Z".parse().unwrap(),
            },
            RunEvent::RunContentExpired,
        ]
    }
}

impl Catalogued for PublicLink {
    fn examples() -> Vec<LinkEvent> {
        let link_id = Uuid::from_u128(0xe1001);
        vec![
            LinkEvent::PublicLinkMinted {
                link_id,
                generation: 1,
                run_id: RUN,
                company_id: COMPANY,
                object: LinkedObject::Artifact,
                artifact_id: Some(ARTIFACT),
            },
            LinkEvent::PublicLinkRevoked { link_id },
        ]
    }
}
