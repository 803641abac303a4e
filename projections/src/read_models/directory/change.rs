//! Directory events decoded for the projection, and the keys of the rows a batch
//! must load before folding them.

use super::rows::*;
use crate::log::StoredEvent;
use anyhow::Context;
use domain::directory::PrincipalRef;
use domain::directory::api_key::{ApiKey, ApiKeyEvent};
use domain::directory::chatroom::{Chatroom, ChatroomEvent};
use domain::directory::company::{Company, CompanyEvent};
use domain::directory::department::{Department, DepartmentEvent};
use domain::directory::social_client::{SocialClient, SocialClientEvent};
use domain::directory::user::{User, UserEvent};
use domain::principal::{ApiKeyScope, PrincipalType};
use std::collections::HashSet;
use uuid::Uuid;

/// A decoded directory event with its aggregate id.
pub(super) enum Change {
    Company(Uuid, CompanyEvent),
    Department(Uuid, DepartmentEvent),
    User(Uuid, UserEvent),
    SocialClient(Uuid, SocialClientEvent),
    Chatroom(Uuid, ChatroomEvent),
    ApiKey(Uuid, ApiKeyEvent),
}

pub(super) fn decode(event: &StoredEvent) -> anyhow::Result<Option<Change>> {
    let id = || {
        Uuid::parse_str(&event.aggregate_id)
            .with_context(|| format!("aggregate id at position {} is not a UUID", event.position))
    };
    Ok(Some(match event.aggregate_type.as_str() {
        "company" => Change::Company(id()?, event.decode::<Company>()?.context("company")?),
        "department" => {
            Change::Department(id()?, event.decode::<Department>()?.context("department")?)
        }
        "user" => Change::User(id()?, event.decode::<User>()?.context("user")?),
        "social_client" => {
            Change::SocialClient(id()?, event.decode::<SocialClient>()?.context("client")?)
        }
        "chatroom" => Change::Chatroom(id()?, event.decode::<Chatroom>()?.context("chatroom")?),
        "api_key" => Change::ApiKey(id()?, event.decode::<ApiKey>()?.context("api key")?),
        _ => return Ok(None),
    }))
}

pub(super) fn member_key(chatroom_id: Uuid, member: &PrincipalRef) -> ChatroomMemberKey {
    ChatroomMemberKey {
        chatroom_id,
        member_kind: member.kind.as_str().into(),
        member_id: member.id,
    }
}

pub(super) fn scope_name(scope: Option<ApiKeyScope>) -> String {
    match scope {
        Some(ApiKeyScope::Sandbox) => "sandbox",
        _ => "full",
    }
    .into()
}

/// The aggregates a batch creates: their rows, and memberships naming them, cannot
/// exist yet, so they are not loaded (in a cold rebuild that is most of them).
pub(super) fn created(changes: &[Change]) -> HashSet<Uuid> {
    changes
        .iter()
        .filter_map(|change| match change {
            Change::Company(id, CompanyEvent::CompanyRegistered { .. })
            | Change::Department(id, DepartmentEvent::DepartmentRegistered { .. })
            | Change::User(id, UserEvent::UserRegistered { .. })
            | Change::SocialClient(id, SocialClientEvent::SocialClientRegistered { .. })
            | Change::Chatroom(id, ChatroomEvent::ChatroomRegistered { .. })
            | Change::ApiKey(id, ApiKeyEvent::ApiKeyIssued { .. }) => Some(*id),
            _ => None,
        })
        .collect()
}

/// The keys of the rows a batch must load before folding.
#[derive(Default)]
pub(super) struct Keys {
    pub(super) companies: Vec<Id>,
    pub(super) departments: Vec<Id>,
    pub(super) users: Vec<Id>,
    pub(super) social_clients: Vec<Id>,
    pub(super) chatrooms: Vec<Id>,
    pub(super) api_keys: Vec<Id>,
    pub(super) department_members: Vec<DepartmentMemberKey>,
    pub(super) chatroom_members: Vec<ChatroomMemberKey>,
}

impl Keys {
    pub(super) fn of(changes: &[Change]) -> Self {
        let created = created(changes);
        let old = |id: &Uuid| !created.contains(id);
        let mut keys = Self::default();
        for change in changes {
            match change {
                Change::Company(id, _) if old(id) => keys.companies.push(Id { id: *id }),
                Change::User(id, _) if old(id) => keys.users.push(Id { id: *id }),
                Change::SocialClient(id, _) if old(id) => keys.social_clients.push(Id { id: *id }),
                Change::ApiKey(id, _) if old(id) => keys.api_keys.push(Id { id: *id }),
                Change::Department(id, event) => {
                    let member = match event {
                        DepartmentEvent::DepartmentMemberAdded { user_id }
                        | DepartmentEvent::DepartmentMemberRemoved { user_id }
                        | DepartmentEvent::DepartmentManagerGranted { user_id }
                        | DepartmentEvent::DepartmentManagerRevoked { user_id } => Some(*user_id),
                        _ => None,
                    };
                    match member {
                        Some(user_id) if old(id) && old(&user_id) => {
                            keys.department_members.push(DepartmentMemberKey {
                                department_id: *id,
                                user_id,
                            })
                        }
                        Some(_) => {}
                        None if old(id) => keys.departments.push(Id { id: *id }),
                        None => {}
                    }
                }
                Change::Chatroom(id, event) => {
                    let member = match event {
                        ChatroomEvent::ChatroomMemberAdded { member }
                        | ChatroomEvent::ChatroomMemberRemoved { member }
                        | ChatroomEvent::ChatroomFavouriteAdded { member }
                        | ChatroomEvent::ChatroomFavouriteRemoved { member } => Some(*member),
                        ChatroomEvent::ChatroomManagerGranted { user_id }
                        | ChatroomEvent::ChatroomManagerRevoked { user_id } => Some(PrincipalRef {
                            kind: PrincipalType::User,
                            id: *user_id,
                        }),
                        _ => None,
                    };
                    match member {
                        Some(member) if old(id) && old(&member.id) => {
                            keys.chatroom_members.push(member_key(*id, &member))
                        }
                        Some(_) => {}
                        None if old(id) => keys.chatrooms.push(Id { id: *id }),
                        None => {}
                    }
                }
                _ => {}
            }
        }
        keys
    }
}
