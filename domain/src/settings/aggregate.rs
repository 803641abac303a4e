//! The company settings aggregate (one per company, id = company id).

use super::policy::{OperatorLimits, PolicyChanges, PolicyValues};
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use crate::validation::Violations;
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Commands of [`CompanySettings`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsCommand {
    /// Records the default policy unless a policy exists (the first `GET /settings`).
    RecordDefault {
        /// The company.
        company_id: Uuid,
        /// The defaults to record.
        defaults: PolicyValues,
    },
    /// Changes the tenant-writable values if `expected_policy_version` is current.
    /// A company without a recorded policy gets the defaults recorded first.
    Update {
        /// The company.
        company_id: Uuid,
        /// The defaults to record when no policy exists yet.
        defaults: PolicyValues,
        /// The version the caller read.
        expected_policy_version: i64,
        /// The fields to change; `allowed_regions` already intersected with the
        /// selectable set.
        changes: PolicyChanges,
    },
    /// The operator changes the company's limits.
    SetOperatorLimits {
        /// The company.
        company_id: Uuid,
        /// The new limits.
        limits: OperatorLimits,
    },
}

/// Events of [`CompanySettings`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum SettingsEvent {
    /// The default policy row was recorded (policy_version 1).
    DefaultPolicyRecorded {
        /// The company.
        company_id: Uuid,
        /// The recorded values.
        values: PolicyValues,
        /// Always 1.
        policy_version: i64,
    },
    /// A manager changed the policy.
    PolicyUpdated {
        /// The new values.
        values: PolicyValues,
        /// The version after the change.
        policy_version: i64,
    },
    /// The operator changed the company's limits.
    OperatorLimitsChanged {
        /// The company.
        company_id: Uuid,
        /// The new limits.
        limits: OperatorLimits,
    },
}

impl DomainEvent for SettingsEvent {
    fn event_type(&self) -> String {
        match self {
            Self::DefaultPolicyRecorded { .. } => "DefaultPolicyRecorded",
            Self::PolicyUpdated { .. } => "PolicyUpdated",
            Self::OperatorLimitsChanged { .. } => "OperatorLimitsChanged",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of settings commands.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SettingsError {
    /// The caller's `policy_version` is not the current one.
    #[error("policy_version {sent} does not match the current version {current}")]
    PolicyVersionConflict {
        /// What the caller sent.
        sent: i64,
        /// The current version.
        current: i64,
    },
    /// A value is out of bounds.
    #[error("invalid settings")]
    Invalid(Violations),
}

impl SpecError for SettingsError {
    fn code(&self) -> Code {
        match self {
            Self::PolicyVersionConflict { .. } => Code::PolicyVersionConflict,
            Self::Invalid(_) => Code::ValidationError,
        }
    }
    fn violations(&self) -> Option<&Violations> {
        match self {
            Self::Invalid(v) => Some(v),
            _ => None,
        }
    }
}

/// The policy of one company.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CompanySettings {
    /// The company, once recorded.
    pub company_id: Option<Uuid>,
    /// The recorded policy (absent before the first record).
    pub values: Option<PolicyValues>,
    /// The optimistic-lock version (0 before the first record).
    pub policy_version: i64,
    /// Operator limits; defaults until the operator sets them.
    pub limits: OperatorLimits,
}

impl Aggregate for CompanySettings {
    const TYPE: &'static str = "company_settings";
    type Command = SettingsCommand;
    type Event = SettingsEvent;
    type Error = SettingsError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        match command {
            SettingsCommand::RecordDefault {
                company_id,
                defaults,
            } => {
                if self.values.is_none() {
                    let event = SettingsEvent::DefaultPolicyRecorded {
                        company_id,
                        values: defaults,
                        policy_version: 1,
                    };
                    sink.write(event, self).await;
                }
            }
            SettingsCommand::Update {
                company_id,
                defaults,
                expected_policy_version,
                changes,
            } => {
                let current = self.values.clone().unwrap_or_else(|| defaults.clone());
                let current_version = if self.values.is_some() {
                    self.policy_version
                } else {
                    1
                };
                if expected_policy_version != current_version {
                    return Err(SettingsError::PolicyVersionConflict {
                        sent: expected_policy_version,
                        current: current_version,
                    });
                }
                let values = changes.apply_to(current);
                values.validate().map_err(SettingsError::Invalid)?;
                if self.values.is_none() {
                    let event = SettingsEvent::DefaultPolicyRecorded {
                        company_id,
                        values: defaults,
                        policy_version: 1,
                    };
                    sink.write(event, self).await;
                }
                let policy_version = self.policy_version + 1;
                sink.write(
                    SettingsEvent::PolicyUpdated {
                        values,
                        policy_version,
                    },
                    self,
                )
                .await;
            }
            SettingsCommand::SetOperatorLimits { company_id, limits } => {
                if self.limits != limits {
                    sink.write(
                        SettingsEvent::OperatorLimitsChanged { company_id, limits },
                        self,
                    )
                    .await;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            SettingsEvent::DefaultPolicyRecorded {
                company_id,
                values,
                policy_version,
            } => {
                self.company_id = Some(company_id);
                self.values = Some(values);
                self.policy_version = policy_version;
            }
            SettingsEvent::PolicyUpdated {
                values,
                policy_version,
            } => {
                self.values = Some(values);
                self.policy_version = policy_version;
            }
            SettingsEvent::OperatorLimitsChanged { company_id, limits } => {
                self.company_id = Some(company_id);
                self.limits = limits;
            }
        }
    }
}

impl AggregateExt for CompanySettings {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn recorded() -> SettingsEvent {
        SettingsEvent::DefaultPolicyRecorded {
            company_id: Uuid::nil(),
            values: PolicyValues::defaults(&["onprem".into()]),
            policy_version: 1,
        }
    }

    fn values(days: i32) -> PolicyValues {
        PolicyValues {
            run_content_retention_days: days,
            ..PolicyValues::defaults(&["onprem".into()])
        }
    }

    fn update(version: i64, days: i32) -> SettingsCommand {
        SettingsCommand::Update {
            company_id: Uuid::nil(),
            defaults: PolicyValues::defaults(&["onprem".into()]),
            expected_policy_version: version,
            changes: PolicyChanges {
                run_content_retention_days: Some(days),
                ..PolicyChanges::default()
            },
        }
    }

    #[test]
    fn recording_twice_records_once() {
        TestFramework::<CompanySettings>::with(())
            .given(vec![recorded()])
            .when(SettingsCommand::RecordDefault {
                company_id: Uuid::nil(),
                defaults: PolicyValues::defaults(&["onprem".into()]),
            })
            .then_expect_events(vec![]);
    }

    #[test]
    fn update_bumps_the_version() {
        TestFramework::<CompanySettings>::with(())
            .given(vec![recorded()])
            .when(update(1, 7))
            .then_expect_events(vec![SettingsEvent::PolicyUpdated {
                values: values(7),
                policy_version: 2,
            }]);
    }

    #[test]
    fn stale_version_conflicts() {
        TestFramework::<CompanySettings>::with(())
            .given(vec![recorded()])
            .when(update(3, 7))
            .then_expect_error(SettingsError::PolicyVersionConflict {
                sent: 3,
                current: 1,
            });
    }

    #[test]
    fn an_update_before_any_read_records_the_defaults_first() {
        TestFramework::<CompanySettings>::with(())
            .given_no_previous_events()
            .when(update(1, 7))
            .then_expect_events(vec![
                recorded(),
                SettingsEvent::PolicyUpdated {
                    values: values(7),
                    policy_version: 2,
                },
            ]);
    }

    #[test]
    fn out_of_bounds_is_invalid() {
        let result = TestFramework::<CompanySettings>::with(())
            .given(vec![recorded()])
            .when(update(1, 0))
            .inspect_result();
        assert!(matches!(result, Err(SettingsError::Invalid(_))));
    }
}
