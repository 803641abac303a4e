//! The department aggregate: name, members and managers.

use super::{DirectoryError, same_company, set_diff};
use crate::AggregateExt;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use std::collections::BTreeSet;
use uuid::Uuid;

/// Commands of [`Department`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DepartmentCommand {
    /// Registers the department or renames it.
    Define {
        /// The department's id.
        department_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Display name.
        name: String,
    },
    /// Makes the member and manager sets equal to the given ones.
    SetMembership {
        /// Users who belong to the department.
        members: BTreeSet<Uuid>,
        /// Users who manage it.
        managers: BTreeSet<Uuid>,
    },
}

/// Events of [`Department`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum DepartmentEvent {
    /// A department exists.
    DepartmentRegistered {
        /// The department's id.
        department_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// Display name.
        name: String,
    },
    /// The display name changed.
    DepartmentRenamed {
        /// The new name.
        name: String,
    },
    /// A user joined.
    DepartmentMemberAdded {
        /// The user.
        user_id: Uuid,
    },
    /// A user left.
    DepartmentMemberRemoved {
        /// The user.
        user_id: Uuid,
    },
    /// A user became a manager of the department.
    DepartmentManagerGranted {
        /// The user.
        user_id: Uuid,
    },
    /// A user stopped managing the department.
    DepartmentManagerRevoked {
        /// The user.
        user_id: Uuid,
    },
}

impl DomainEvent for DepartmentEvent {
    fn event_type(&self) -> String {
        match self {
            Self::DepartmentRegistered { .. } => "DepartmentRegistered",
            Self::DepartmentRenamed { .. } => "DepartmentRenamed",
            Self::DepartmentMemberAdded { .. } => "DepartmentMemberAdded",
            Self::DepartmentMemberRemoved { .. } => "DepartmentMemberRemoved",
            Self::DepartmentManagerGranted { .. } => "DepartmentManagerGranted",
            Self::DepartmentManagerRevoked { .. } => "DepartmentManagerRevoked",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// A department of a company.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Department {
    /// Company, once registered.
    pub company_id: Option<Uuid>,
    /// Display name.
    pub name: String,
    /// Member users.
    pub members: BTreeSet<Uuid>,
    /// Manager users.
    pub managers: BTreeSet<Uuid>,
}

impl Aggregate for Department {
    const TYPE: &'static str = "department";
    type Command = DepartmentCommand;
    type Event = DepartmentEvent;
    type Error = DirectoryError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        use DepartmentEvent::*;
        match command {
            DepartmentCommand::Define {
                department_id,
                company_id,
                name,
            } => {
                same_company(self.company_id, company_id, "department")?;
                if self.company_id.is_none() {
                    sink.write(
                        DepartmentRegistered {
                            department_id,
                            company_id,
                            name,
                        },
                        self,
                    )
                    .await;
                } else if self.name != name {
                    sink.write(DepartmentRenamed { name }, self).await;
                }
            }
            DepartmentCommand::SetMembership { members, managers } => {
                if self.company_id.is_none() {
                    return Err(DirectoryError::NotRegistered("department"));
                }
                let (added, removed) = set_diff(&self.members, &members);
                for user_id in added {
                    sink.write(DepartmentMemberAdded { user_id }, self).await;
                }
                for user_id in removed {
                    sink.write(DepartmentMemberRemoved { user_id }, self).await;
                }
                let (granted, revoked) = set_diff(&self.managers, &managers);
                for user_id in granted {
                    sink.write(DepartmentManagerGranted { user_id }, self).await;
                }
                for user_id in revoked {
                    sink.write(DepartmentManagerRevoked { user_id }, self).await;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        use DepartmentEvent::*;
        match event {
            DepartmentRegistered {
                company_id, name, ..
            } => {
                self.company_id = Some(company_id);
                self.name = name;
            }
            DepartmentRenamed { name } => self.name = name,
            DepartmentMemberAdded { user_id } => {
                self.members.insert(user_id);
            }
            DepartmentMemberRemoved { user_id } => {
                self.members.remove(&user_id);
            }
            DepartmentManagerGranted { user_id } => {
                self.managers.insert(user_id);
            }
            DepartmentManagerRevoked { user_id } => {
                self.managers.remove(&user_id);
            }
        }
    }
}

impl AggregateExt for Department {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn registered() -> DepartmentEvent {
        DepartmentEvent::DepartmentRegistered {
            department_id: Uuid::from_u128(2),
            company_id: Uuid::from_u128(1),
            name: "R&D".into(),
        }
    }

    #[test]
    fn membership_emits_only_differences() {
        let (a, b) = (Uuid::from_u128(10), Uuid::from_u128(11));
        TestFramework::<Department>::with(())
            .given(vec![
                registered(),
                DepartmentEvent::DepartmentMemberAdded { user_id: a },
            ])
            .when(DepartmentCommand::SetMembership {
                members: [b].into(),
                managers: [b].into(),
            })
            .then_expect_events(vec![
                DepartmentEvent::DepartmentMemberAdded { user_id: b },
                DepartmentEvent::DepartmentMemberRemoved { user_id: a },
                DepartmentEvent::DepartmentManagerGranted { user_id: b },
            ]);
    }

    #[test]
    fn membership_needs_a_registered_department() {
        TestFramework::<Department>::with(())
            .given_no_previous_events()
            .when(DepartmentCommand::SetMembership {
                members: BTreeSet::new(),
                managers: BTreeSet::new(),
            })
            .then_expect_error(DirectoryError::NotRegistered("department"));
    }

    #[test]
    fn another_company_cannot_redefine_the_department() {
        TestFramework::<Department>::with(())
            .given(vec![registered()])
            .when(DepartmentCommand::Define {
                department_id: Uuid::from_u128(2),
                company_id: Uuid::from_u128(9),
                name: "R&D".into(),
            })
            .then_expect_error(DirectoryError::CompanyMismatch("department"));
    }
}
