//! One representative event of each event type of agent proposals, for the
//! registry.

use super::Catalogued;
use crate::agent::proposal::{AgentProposal, ProposalEvent, ProposalTerms, Turn};
use crate::directory::PrincipalRef;
use crate::principal::PrincipalType;
use crate::runs::run::StoredObject;
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const ROOM: Uuid = Uuid::from_u128(0xc001);
const USER: Uuid = Uuid::from_u128(0xb001);
const PROPOSAL: Uuid = Uuid::from_u128(0xd7001);
const RUN: Uuid = Uuid::from_u128(0xd1001);

impl Catalogued for AgentProposal {
    fn examples() -> Vec<ProposalEvent> {
        let turn = |seq: i64| Turn {
            message_id: format!("msg-{seq}"),
            message_seq: seq,
        };
        vec![
            ProposalEvent::ProposalPrepared(Box::new(ProposalTerms {
                proposal_id: PROPOSAL,
                company_id: COMPANY,
                chatroom_id: ROOM,
                principal: PrincipalRef {
                    kind: PrincipalType::User,
                    id: USER,
                },
                task_id: Uuid::from_u128(0xf1001),
                task_version_id: Uuid::from_u128(0xf2001),
                input: StoredObject {
                    key: "runs/inputs/a001/ab.json".into(),
                    byte_size: 13,
                    digest: "sha256:ab".into(),
                },
                timeout_seconds: 1800,
                origin: turn(41),
                summary: "Run report v3 with 1 input field".into(),
                requires_confirmation: true,
                expires_at: chrono::DateTime::UNIX_EPOCH + chrono::Duration::days(20_460),
            })),
            ProposalEvent::ProposalCommitStarted {
                run_id: RUN,
                turn: turn(42),
            },
            ProposalEvent::ProposalCommitted { run_id: RUN },
            ProposalEvent::ProposalCommitAbandoned {
                failed: false,
                error: "retryable".into(),
            },
            ProposalEvent::ProposalSuperseded {
                by: Uuid::from_u128(0xd7002),
            },
            ProposalEvent::ProposalCancelled,
            ProposalEvent::ProposalExpired,
        ]
    }
}
