//! One representative event of each event type of shares and bindings, for the
//! registry.

use super::Catalogued;
use crate::sharing::binding::{Binding, BindingEvent, Pin, SlotAssignment};
use crate::sharing::policy::SlotPolicy;
use crate::sharing::share::{Share, ShareEvent, ShareGranted, ShareTargetKind};
use serde_json::json;
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const ROOM: Uuid = Uuid::from_u128(0xc001);
const TASK: Uuid = Uuid::from_u128(0xf1001);
const VERSION: Uuid = Uuid::from_u128(0xf2001);
const GRANT: Uuid = Uuid::from_u128(0x5a001);
const BINDING: Uuid = Uuid::from_u128(0xb1001);

impl Catalogued for Share {
    fn examples() -> Vec<ShareEvent> {
        vec![
            ShareEvent::ShareGranted(ShareGranted {
                grant_id: GRANT,
                generation: 1,
                task_id: TASK,
                company_id: COMPANY,
                target_kind: ShareTargetKind::Chatroom,
                target_id: ROOM,
                secret_slot_policies: [("API_TOKEN".to_string(), SlotPolicy::Owner)].into(),
            }),
            ShareEvent::ShareRevoked {
                grant_id: GRANT,
                reason: "project ended".into(),
            },
        ]
    }
}

fn pin() -> Pin {
    Pin {
        task_version_id: VERSION,
        version_number: 1,
        task_version_digest: format!("sha256:{}", "ab".repeat(32)),
        input_schema: Some(json!({"type": "object"})),
        secret_slots: vec![SlotAssignment {
            name: "API_TOKEN".into(),
            policy: SlotPolicy::Owner,
        }],
        share_grant_id: GRANT,
    }
}

impl Catalogued for Binding {
    fn examples() -> Vec<BindingEvent> {
        vec![
            BindingEvent::BindingEnabled {
                binding_id: BINDING,
                generation: 1,
                chatroom_id: ROOM,
                task_id: TASK,
                company_id: COMPANY,
                pin: pin(),
            },
            BindingEvent::BindingVersionAccepted {
                binding_id: BINDING,
                pin: pin(),
            },
            BindingEvent::BindingRevoked {
                binding_id: BINDING,
                reason: "disabled".into(),
            },
        ]
    }
}
