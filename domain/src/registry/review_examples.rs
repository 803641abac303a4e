//! One representative event of each event type of the review module and of held
//! callback writes, for the registry.

use super::Catalogued;
use crate::review::{
    Gate, GateCondition, ReviewGroup, ReviewGroupEvent, ReviewGroupTerms, ReviewTemplate,
    ReviewTemplateEvent, ReviewTemplateTerms,
};
use crate::tables::callback_delivery::CallbackOp;
use crate::tables::staged_change::{Held, StagedChange, StagedChangeEvent, process_id};
use serde_json::json;
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const GROUP: Uuid = Uuid::from_u128(0x7701);
const TEMPLATE: Uuid = Uuid::from_u128(0x7702);
const REVIEWER: &str = "user:00000000-0000-0000-0000-00000000b001";

fn gate() -> Gate {
    Gate {
        name: "Finance".into(),
        condition: GateCondition {
            condition_type: "group".into(),
            group_id: GROUP,
            mode: "any".into(),
        },
    }
}

impl Catalogued for ReviewGroup {
    fn examples() -> Vec<ReviewGroupEvent> {
        vec![ReviewGroupEvent::ReviewGroupCreated(Box::new(
            ReviewGroupTerms {
                group_id: GROUP,
                company_id: COMPANY,
                name: "Finance".into(),
                description: Some("Approves payouts".into()),
                member_ids: vec![Uuid::from_u128(0xb001)],
                created_by: REVIEWER.into(),
            },
        ))]
    }
}

impl Catalogued for ReviewTemplate {
    fn examples() -> Vec<ReviewTemplateEvent> {
        vec![ReviewTemplateEvent::ReviewTemplateCreated(Box::new(
            ReviewTemplateTerms {
                template_id: TEMPLATE,
                company_id: COMPANY,
                name: "Payout review".into(),
                description: None,
                gates: vec![gate()],
                require_signature: true,
                created_by: REVIEWER.into(),
            },
        ))]
    }
}

impl Catalogued for StagedChange {
    fn examples() -> Vec<StagedChangeEvent> {
        let staged = Uuid::from_u128(0x7801);
        vec![
            StagedChangeEvent::ChangeHeld(Box::new(Held {
                staged_change_id: staged,
                process_id: process_id(staged),
                company_id: COMPANY,
                table_id: Uuid::from_u128(0x7001),
                token_id: Uuid::from_u128(0x7901),
                op: CallbackOp::Create,
                record_id: Uuid::from_u128(0x7301),
                data: serde_json::from_value(json!({"Amount": 900})).unwrap_or_default(),
                rule_id: "big-payouts".into(),
                rule_label: "Payouts need finance".into(),
                template_id: TEMPLATE,
                gates: vec![gate()],
                require_signature: true,
                author: REVIEWER.into(),
                source: crate::tables::staged_change::HoldSource::CallbackToken,
            })),
            StagedChangeEvent::ChangeApproved {
                by: REVIEWER.into(),
                gates: vec![0],
                signature: Some("A. Reviewer".into()),
            },
            StagedChangeEvent::ChangeApplied,
            StagedChangeEvent::ChangeRejected {
                by: REVIEWER.into(),
                reason: Some("duplicate".into()),
            },
        ]
    }
}
