//! One representative event of each event type, for the registry.

use super::Catalogued;
use crate::directory::PrincipalRef;
use crate::directory::api_key::{ApiKey, ApiKeyEvent, KeyAccess};
use crate::directory::chatroom::{Chatroom, ChatroomEvent};
use crate::directory::company::{Company, CompanyEvent};
use crate::directory::department::{Department, DepartmentEvent};
use crate::directory::social_client::{SocialClient, SocialClientEvent};
use crate::directory::user::{User, UserEvent};
use crate::principal::{ApiKeyScope, PrincipalType};
use crate::settings::{CompanySettings, OperatorLimits, PolicyValues, SettingsEvent};
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(0xa001);
const DEPARTMENT: Uuid = Uuid::from_u128(0xd001);
const CHATROOM: Uuid = Uuid::from_u128(0xc001);
const USER: Uuid = Uuid::from_u128(0xb001);
const CLIENT: Uuid = Uuid::from_u128(0x5001);
const KEY: Uuid = Uuid::from_u128(0xe001);

fn user() -> PrincipalRef {
    PrincipalRef {
        kind: PrincipalType::User,
        id: USER,
    }
}

impl Catalogued for Company {
    fn examples() -> Vec<CompanyEvent> {
        vec![
            CompanyEvent::CompanyRegistered {
                company_id: COMPANY,
                name: "Acme".into(),
            },
            CompanyEvent::CompanyRenamed {
                name: "Acme Corp".into(),
            },
        ]
    }
}

impl Catalogued for Department {
    fn examples() -> Vec<DepartmentEvent> {
        use DepartmentEvent::*;
        vec![
            DepartmentRegistered {
                department_id: DEPARTMENT,
                company_id: COMPANY,
                name: "R&D".into(),
            },
            DepartmentRenamed {
                name: "Research".into(),
            },
            DepartmentMemberAdded { user_id: USER },
            DepartmentMemberRemoved { user_id: USER },
            DepartmentManagerGranted { user_id: USER },
            DepartmentManagerRevoked { user_id: USER },
        ]
    }
}

impl Catalogued for Chatroom {
    fn examples() -> Vec<ChatroomEvent> {
        use ChatroomEvent::*;
        vec![
            ChatroomRegistered {
                chatroom_id: CHATROOM,
                company_id: COMPANY,
                name: "lab".into(),
                department_id: Some(DEPARTMENT),
                archived: false,
            },
            ChatroomRenamed {
                name: "lab 2".into(),
            },
            ChatroomDepartmentChanged {
                department_id: None,
            },
            ChatroomArchived,
            ChatroomRestored,
            ChatroomMemberAdded { member: user() },
            ChatroomMemberRemoved { member: user() },
            ChatroomManagerGranted { user_id: USER },
            ChatroomManagerRevoked { user_id: USER },
            ChatroomFavouriteAdded { member: user() },
            ChatroomFavouriteRemoved { member: user() },
            ChatroomJobsSet {
                jobs: Some(vec!["sandbox".into()]),
            },
        ]
    }
}

impl Catalogued for User {
    fn examples() -> Vec<UserEvent> {
        vec![
            UserEvent::UserRegistered {
                user_id: USER,
                company_id: COMPANY,
                username: "ann".into(),
                role: 1,
            },
            UserEvent::UserRenamed {
                username: "ann.b".into(),
            },
            UserEvent::UserRoleChanged { role: 3 },
        ]
    }
}

impl Catalogued for ApiKey {
    fn examples() -> Vec<ApiKeyEvent> {
        let access = KeyAccess {
            scope: Some(ApiKeyScope::Sandbox),
            chatroom_ids: [CHATROOM].into(),
            domains: vec!["*".into()],
        };
        vec![
            ApiKeyEvent::ApiKeyIssued {
                key_id: KEY,
                company_id: COMPANY,
                owner: user(),
                // SHA-256 of "example": the secret itself never enters the log.
                secret_sha256: "50d858e0985ecc7f60418aaf0cc5ab587f42c2570a884095a9e8ccacd0f6545c"
                    .into(),
                access: access.clone(),
            },
            ApiKeyEvent::ApiKeyAccessChanged {
                access: KeyAccess {
                    scope: Some(ApiKeyScope::Full),
                    ..access
                },
            },
            ApiKeyEvent::ApiKeyRevoked,
        ]
    }
}

impl Catalogued for SocialClient {
    fn examples() -> Vec<SocialClientEvent> {
        vec![
            SocialClientEvent::SocialClientRegistered {
                client_id: CLIENT,
                company_id: COMPANY,
                platform: "line".into(),
                platform_user_id: "U1".into(),
                display_name: "Line user".into(),
            },
            SocialClientEvent::SocialClientUpdated {
                platform: "line".into(),
                platform_user_id: "U2".into(),
                display_name: "Line user 2".into(),
            },
        ]
    }
}

impl Catalogued for CompanySettings {
    fn examples() -> Vec<SettingsEvent> {
        let values = PolicyValues::defaults(&["onprem".into()]);
        vec![
            SettingsEvent::DefaultPolicyRecorded {
                company_id: COMPANY,
                values: values.clone(),
                policy_version: 1,
            },
            SettingsEvent::PolicyUpdated {
                values: PolicyValues {
                    run_content_retention_days: 60,
                    ..values
                },
                policy_version: 2,
            },
            SettingsEvent::OperatorLimitsChanged {
                company_id: COMPANY,
                limits: OperatorLimits::default(),
            },
        ]
    }
}

impl Catalogued for crate::switch::SandboxSwitch {
    fn examples() -> Vec<crate::switch::SwitchEvent> {
        vec![crate::switch::SwitchEvent::SandboxSwitchSet(
            crate::switch::SwitchChange {
                company_id: Some(COMPANY),
                enabled: false,
                reason: "billing dispute".into(),
            },
        )]
    }
}

impl Catalogued for crate::notifications::NotificationInbox {
    fn examples() -> Vec<crate::notifications::InboxEvent> {
        use crate::notifications::InboxEvent;
        vec![
            InboxEvent::NotificationsRead {
                user_id: USER,
                ids: vec![Uuid::from_u128(0x6001)],
            },
            InboxEvent::AllNotificationsRead {
                user_id: USER,
                until: chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default(),
                up_to_position: Some(42),
            },
        ]
    }
}

impl Catalogued for crate::pricing::Pricing {
    fn examples() -> Vec<crate::pricing::PricingEvent> {
        use crate::pricing::{Budget, PricingEvent, RegionPrice};
        vec![
            PricingEvent::PriceSet(RegionPrice {
                region: "onprem".into(),
                currency: "USD".into(),
                vcpu_second_micros: 10,
                memory_gib_second_micros: 2,
            }),
            PricingEvent::BudgetSet(Budget {
                company_id: uuid::Uuid::from_u128(0xa001),
                currency: "USD".into(),
                amount_micros: 100_000_000,
                window_days: 30,
                starts_at: chrono::DateTime::from_timestamp(1_767_225_600, 0).unwrap_or_default(),
            }),
            PricingEvent::BudgetCleared {
                company_id: uuid::Uuid::from_u128(0xa001),
            },
        ]
    }
}

impl Catalogued for crate::runner_release::RunnerRelease {
    fn examples() -> Vec<crate::runner_release::ReleaseEvent> {
        use crate::runner_release::ReleaseEvent;
        vec![
            ReleaseEvent::RunnerReleaseWithdrawn {
                release: "5.21.0".into(),
                reason: "a sandbox escape in the runner".into(),
            },
            ReleaseEvent::RunnerReleaseApproved {
                release: "5.21.0".into(),
                reason: "fixed in the stage image".into(),
            },
        ]
    }
}

impl Catalogued for crate::build_fence::BuildFence {
    fn examples() -> Vec<crate::build_fence::FenceEvent> {
        use crate::build_fence::FenceEvent;
        vec![
            FenceEvent::BuildFenceRaised {
                retry_after_seconds: 300,
                reason: "stage image rollout".into(),
            },
            FenceEvent::BuildFenceLifted {
                reason: "rollout done".into(),
            },
        ]
    }
}
