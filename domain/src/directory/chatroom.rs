//! The chatroom aggregate: name, owning department, lifecycle, members, managers,
//! the members who keep it among their favourites, and its jobs list (which agent
//! tool sets load in it).

use super::{DirectoryError, PrincipalRef, same_company, set_diff};
use crate::AggregateExt;
use crate::upcast::Upcaster;
use cqrs_es::event_sink::EventSink;
use cqrs_es::persist::EventUpcaster;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use uuid::Uuid;

/// Commands of [`Chatroom`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatroomCommand {
    /// Registers the room or brings its name, department and lifecycle up to date.
    Define {
        /// The room's id.
        chatroom_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Display name.
        name: String,
        /// The department the room belongs to, if any.
        department_id: Option<Uuid>,
        /// Whether the room is archived (not live).
        archived: bool,
    },
    /// Makes the member, manager and favourite sets equal to the given ones.
    SetMembership {
        /// Users and social media clients in the room.
        members: BTreeSet<PrincipalRef>,
        /// Users who manage the room.
        managers: BTreeSet<Uuid>,
        /// Members who keep the room among their favourites.
        favourites: BTreeSet<PrincipalRef>,
    },
    /// Sets the room's jobs list (`None` restores auto-detection).
    SetJobs {
        /// The job names, or `None`.
        jobs: Option<Vec<String>>,
    },
}

/// Events of [`Chatroom`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum ChatroomEvent {
    /// A room exists.
    ChatroomRegistered {
        /// The room's id.
        chatroom_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Display name.
        name: String,
        /// Owning department, if any.
        department_id: Option<Uuid>,
        /// Whether the room starts archived (version 2; version 1 rooms started live
        /// and were archived by a separate event).
        archived: bool,
    },
    /// The display name changed.
    ChatroomRenamed {
        /// The new name.
        name: String,
    },
    /// The room moved to another department (or to none).
    ChatroomDepartmentChanged {
        /// The new department.
        department_id: Option<Uuid>,
    },
    /// The room is no longer live.
    ChatroomArchived,
    /// The room is live again.
    ChatroomRestored,
    /// A user or social media client joined.
    ChatroomMemberAdded {
        /// Who joined.
        member: PrincipalRef,
    },
    /// A user or social media client left.
    ChatroomMemberRemoved {
        /// Who left.
        member: PrincipalRef,
    },
    /// A user became a room manager.
    ChatroomManagerGranted {
        /// The user.
        user_id: Uuid,
    },
    /// A user stopped managing the room.
    ChatroomManagerRevoked {
        /// The user.
        user_id: Uuid,
    },
    /// A member put the room among its favourites.
    ChatroomFavouriteAdded {
        /// The member.
        member: PrincipalRef,
    },
    /// A member took the room off its favourites.
    ChatroomFavouriteRemoved {
        /// The member.
        member: PrincipalRef,
    },
    /// The room's jobs list changed.
    ChatroomJobsSet {
        /// The job names (sorted, without repeats), or `None` for auto-detection.
        jobs: Option<Vec<String>>,
    },
}

impl DomainEvent for ChatroomEvent {
    fn event_type(&self) -> String {
        match self {
            Self::ChatroomRegistered { .. } => "ChatroomRegistered",
            Self::ChatroomRenamed { .. } => "ChatroomRenamed",
            Self::ChatroomDepartmentChanged { .. } => "ChatroomDepartmentChanged",
            Self::ChatroomArchived => "ChatroomArchived",
            Self::ChatroomRestored => "ChatroomRestored",
            Self::ChatroomMemberAdded { .. } => "ChatroomMemberAdded",
            Self::ChatroomMemberRemoved { .. } => "ChatroomMemberRemoved",
            Self::ChatroomManagerGranted { .. } => "ChatroomManagerGranted",
            Self::ChatroomManagerRevoked { .. } => "ChatroomManagerRevoked",
            Self::ChatroomFavouriteAdded { .. } => "ChatroomFavouriteAdded",
            Self::ChatroomFavouriteRemoved { .. } => "ChatroomFavouriteRemoved",
            Self::ChatroomJobsSet { .. } => "ChatroomJobsSet",
        }
        .into()
    }
    fn event_version(&self) -> String {
        match self {
            Self::ChatroomRegistered { .. } => "2",
            _ => "1",
        }
        .into()
    }
}

/// A chatroom of a company.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Chatroom {
    /// Company, once registered.
    pub company_id: Option<Uuid>,
    /// Display name.
    pub name: String,
    /// Owning department.
    pub department_id: Option<Uuid>,
    /// Whether the room is archived.
    pub archived: bool,
    /// Members.
    pub members: BTreeSet<PrincipalRef>,
    /// Manager users.
    pub managers: BTreeSet<Uuid>,
    /// Members who keep the room among their favourites.
    #[serde(default)]
    pub favourites: BTreeSet<PrincipalRef>,
    /// The jobs list; `None` means auto-detection.
    #[serde(default)]
    pub jobs: Option<Vec<String>>,
}

impl Aggregate for Chatroom {
    const TYPE: &'static str = "chatroom";
    type Command = ChatroomCommand;
    type Event = ChatroomEvent;
    type Error = DirectoryError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        use ChatroomEvent::*;
        match command {
            ChatroomCommand::Define {
                chatroom_id,
                company_id,
                name,
                department_id,
                archived,
            } => {
                same_company(self.company_id, company_id, "chatroom")?;
                if self.company_id.is_none() {
                    let event = ChatroomRegistered {
                        chatroom_id,
                        company_id,
                        name,
                        department_id,
                        archived,
                    };
                    sink.write(event, self).await;
                } else {
                    if self.name != name {
                        sink.write(ChatroomRenamed { name }, self).await;
                    }
                    if self.department_id != department_id {
                        sink.write(ChatroomDepartmentChanged { department_id }, self)
                            .await;
                    }
                }
                match (self.archived, archived) {
                    (false, true) => sink.write(ChatroomArchived, self).await,
                    (true, false) => sink.write(ChatroomRestored, self).await,
                    _ => {}
                }
            }
            ChatroomCommand::SetMembership {
                members,
                managers,
                favourites,
            } => {
                if self.company_id.is_none() {
                    return Err(DirectoryError::NotRegistered("chatroom"));
                }
                let (added, removed) = set_diff(&self.members, &members);
                for member in added {
                    sink.write(ChatroomMemberAdded { member }, self).await;
                }
                for member in removed {
                    sink.write(ChatroomMemberRemoved { member }, self).await;
                }
                let (granted, revoked) = set_diff(&self.managers, &managers);
                for user_id in granted {
                    sink.write(ChatroomManagerGranted { user_id }, self).await;
                }
                for user_id in revoked {
                    sink.write(ChatroomManagerRevoked { user_id }, self).await;
                }
                let (added, removed) = set_diff(&self.favourites, &favourites);
                for member in added {
                    sink.write(ChatroomFavouriteAdded { member }, self).await;
                }
                for member in removed {
                    sink.write(ChatroomFavouriteRemoved { member }, self).await;
                }
            }
            ChatroomCommand::SetJobs { jobs } => {
                if self.company_id.is_none() {
                    return Err(DirectoryError::NotRegistered("chatroom"));
                }
                let jobs = jobs.map(|list| {
                    let set: BTreeSet<String> = list.into_iter().collect();
                    set.into_iter().collect::<Vec<_>>()
                });
                if self.jobs != jobs {
                    sink.write(ChatroomJobsSet { jobs }, self).await;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        use ChatroomEvent::*;
        match event {
            ChatroomRegistered {
                company_id,
                name,
                department_id,
                archived,
                ..
            } => {
                self.company_id = Some(company_id);
                self.name = name;
                self.department_id = department_id;
                self.archived = archived;
            }
            ChatroomRenamed { name } => self.name = name,
            ChatroomDepartmentChanged { department_id } => self.department_id = department_id,
            ChatroomArchived => self.archived = true,
            ChatroomRestored => self.archived = false,
            ChatroomMemberAdded { member } => {
                self.members.insert(member);
            }
            ChatroomMemberRemoved { member } => {
                self.members.remove(&member);
            }
            ChatroomManagerGranted { user_id } => {
                self.managers.insert(user_id);
            }
            ChatroomManagerRevoked { user_id } => {
                self.managers.remove(&user_id);
            }
            ChatroomFavouriteAdded { member } => {
                self.favourites.insert(member);
            }
            ChatroomFavouriteRemoved { member } => {
                self.favourites.remove(&member);
            }
            ChatroomJobsSet { jobs } => self.jobs = jobs,
        }
    }
}

impl AggregateExt for Chatroom {
    /// `ChatroomRegistered` v1 had no `archived`: such rooms started live.
    fn upcasters() -> Vec<Box<dyn EventUpcaster>> {
        vec![Box::new(Upcaster {
            event_type: "ChatroomRegistered",
            from_version: "1",
            to_version: "2",
            change: |fields| {
                fields.insert("archived".into(), false.into());
            },
        })]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::principal::PrincipalType;
    use cqrs_es::test::TestFramework;

    fn define(archived: bool, department_id: Option<Uuid>) -> ChatroomCommand {
        ChatroomCommand::Define {
            chatroom_id: Uuid::from_u128(3),
            company_id: Uuid::from_u128(1),
            name: "lab".into(),
            department_id,
            archived,
        }
    }

    fn registered() -> ChatroomEvent {
        ChatroomEvent::ChatroomRegistered {
            chatroom_id: Uuid::from_u128(3),
            company_id: Uuid::from_u128(1),
            name: "lab".into(),
            department_id: None,
            archived: false,
        }
    }

    #[test]
    fn a_room_defined_archived_is_registered_archived_in_one_event() {
        let ChatroomEvent::ChatroomRegistered {
            chatroom_id,
            company_id,
            name,
            department_id,
            ..
        } = registered()
        else {
            unreachable!()
        };
        TestFramework::<Chatroom>::with(())
            .given_no_previous_events()
            .when(define(true, None))
            .then_expect_events(vec![ChatroomEvent::ChatroomRegistered {
                chatroom_id,
                company_id,
                name,
                department_id,
                archived: true,
            }]);
    }

    #[test]
    fn define_tracks_department_and_lifecycle() {
        let dept = Some(Uuid::from_u128(2));
        TestFramework::<Chatroom>::with(())
            .given(vec![registered()])
            .when(define(true, dept))
            .then_expect_events(vec![
                ChatroomEvent::ChatroomDepartmentChanged {
                    department_id: dept,
                },
                ChatroomEvent::ChatroomArchived,
            ]);
        TestFramework::<Chatroom>::with(())
            .given(vec![registered()])
            .when(define(false, None))
            .then_expect_events(vec![]);
    }

    #[test]
    fn social_clients_and_users_are_members() {
        let smc = PrincipalRef {
            kind: PrincipalType::SocialMediaClient,
            id: Uuid::from_u128(7),
        };
        TestFramework::<Chatroom>::with(())
            .given(vec![registered()])
            .when(ChatroomCommand::SetMembership {
                members: [smc].into(),
                managers: BTreeSet::new(),
                favourites: [smc].into(),
            })
            .then_expect_events(vec![
                ChatroomEvent::ChatroomMemberAdded { member: smc },
                ChatroomEvent::ChatroomFavouriteAdded { member: smc },
            ]);
    }

    #[test]
    fn jobs_are_stored_sorted_once_and_only_when_they_change() {
        let sandbox = || Some(vec!["sandbox".to_string()]);
        TestFramework::<Chatroom>::with(())
            .given(vec![registered()])
            .when(ChatroomCommand::SetJobs {
                jobs: Some(vec!["sandbox".into(), "sandbox".into()]),
            })
            .then_expect_events(vec![ChatroomEvent::ChatroomJobsSet { jobs: sandbox() }]);
        TestFramework::<Chatroom>::with(())
            .given(vec![
                registered(),
                ChatroomEvent::ChatroomJobsSet { jobs: sandbox() },
            ])
            .when(ChatroomCommand::SetJobs { jobs: sandbox() })
            .then_expect_events(vec![]);
        TestFramework::<Chatroom>::with(())
            .given(vec![
                registered(),
                ChatroomEvent::ChatroomJobsSet { jobs: sandbox() },
            ])
            .when(ChatroomCommand::SetJobs { jobs: None })
            .then_expect_events(vec![ChatroomEvent::ChatroomJobsSet { jobs: None }]);
    }
}
