//! One representative event of each event type of secrets, for the registry.

use super::Catalogued;
use crate::secrets::ConsumerScope;
use crate::secrets::approval::{
    ApprovalSource, ApprovalTerms, SecretApproval, SecretApprovalEvent,
};
use crate::secrets::binding::{SecretBinding, SecretBindingEvent, SlotTarget, ValueVersion};
use crate::secrets::operation::{
    OperationKind, OperationRecord, SecretOperation, SecretOperationEvent,
};
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const ROOM: Uuid = Uuid::from_u128(0xc001);
const TASK: Uuid = Uuid::from_u128(0xf1001);
const VERSION: Uuid = Uuid::from_u128(0xf2001);
const BINDING: Uuid = Uuid::from_u128(0x5b001);
const OPERATION: Uuid = Uuid::from_u128(0x5c001);

fn version(n: u128) -> ValueVersion {
    ValueVersion {
        value_version_id: Uuid::from_u128(0x5e000 + n),
        value_hmac_sha256: "9f".repeat(32),
        byte_size: 24,
    }
}

impl Catalogued for SecretBinding {
    fn examples() -> Vec<SecretBindingEvent> {
        vec![
            SecretBindingEvent::SecretBound {
                binding_id: BINDING,
                generation: 1,
                operation_id: OPERATION,
                target: SlotTarget {
                    company_id: COMPANY,
                    consumer_scope: ConsumerScope::Chatroom,
                    consumer_id: ROOM,
                    task_id: TASK,
                    slot_name: "API_TOKEN".into(),
                },
                version: version(1),
            },
            SecretBindingEvent::SecretRotated {
                binding_id: BINDING,
                operation_id: Uuid::from_u128(0x5c002),
                version: version(2),
            },
            SecretBindingEvent::SecretRevoked {
                binding_id: BINDING,
                operation_id: Uuid::from_u128(0x5c003),
                shredded_version_ids: vec![
                    version(1).value_version_id,
                    version(2).value_version_id,
                ],
            },
        ]
    }
}

impl Catalogued for SecretOperation {
    fn examples() -> Vec<SecretOperationEvent> {
        vec![SecretOperationEvent::SecretOperationApplied(
            OperationRecord {
                operation_id: OPERATION,
                kind: OperationKind::Write,
                binding_id: BINDING,
                binding_aggregate_id: Uuid::from_u128(0x5b000),
                request_hash: format!("sha256:{}", "e1".repeat(32)),
            },
        )]
    }
}

impl Catalogued for SecretApproval {
    fn examples() -> Vec<SecretApprovalEvent> {
        let approval_id = Uuid::from_u128(0x5d001);
        vec![
            SecretApprovalEvent::SecretApprovalGranted {
                approval_id,
                generation: 1,
                terms: ApprovalTerms {
                    company_id: COMPANY,
                    consumer_scope: ConsumerScope::Chatroom,
                    consumer_id: ROOM,
                    task_id: TASK,
                    task_version_id: VERSION,
                    task_version_digest: format!("sha256:{}", "ab".repeat(32)),
                    slot_names: vec!["API_TOKEN".into()],
                    source: ApprovalSource::Explicit,
                },
            },
            SecretApprovalEvent::SecretApprovalRevoked {
                approval_id,
                reason: "rotating vendors".into(),
            },
        ]
    }
}
