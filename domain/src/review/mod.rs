//! The review module (spec `custom-tables.md` section 5, "REST-only steps"): review
//! groups of company users, and review templates whose gates name the groups that
//! decide. An approval rule of a custom table names a template; a write the rule
//! holds is decided by the template's groups ([`crate::tables::staged_change`]).

pub mod group;
pub mod template;

pub use group::{ReviewGroup, ReviewGroupCommand, ReviewGroupEvent, ReviewGroupTerms};
pub use template::{
    Gate, GateCondition, ReviewTemplate, ReviewTemplateCommand, ReviewTemplateEvent,
    ReviewTemplateTerms,
};

use crate::error::{Code, SpecError};

/// Longest name of a group, a template or a gate.
pub const MAX_NAME: usize = 200;
/// Most members of a group.
pub const MAX_MEMBERS: usize = 100;
/// Most gates of a template.
pub const MAX_GATES: usize = 10;

/// Refusals of review commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ReviewError {
    /// The definition breaks a rule (400 `review_config_invalid`).
    #[error("{0}")]
    Invalid(String),
}

impl SpecError for ReviewError {
    fn code(&self) -> Code {
        Code::ReviewConfigInvalid
    }
}

/// Defines an aggregate that is created once and never changes (a review group,
/// a review template): its command `Create(terms)` (nothing happens when it
/// exists; the terms are checked by their `check`), its one event, and its state.
macro_rules! created_once {
    (
        $(#[$doc:meta])*
        $aggregate:ident, $command:ident, $event:ident, $created:ident, $terms:ty, $type:literal
    ) => {
        #[doc = concat!("Commands of [`", stringify!($aggregate), "`].")]
        #[derive(Debug, Clone, PartialEq)]
        pub enum $command {
            /// Creates it (nothing happens when it exists).
            Create(Box<$terms>),
        }

        #[doc = concat!("Events of [`", stringify!($aggregate), "`].")]
        #[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
        pub enum $event {
            /// It was created.
            $created(Box<$terms>),
        }

        impl cqrs_es::DomainEvent for $event {
            fn event_type(&self) -> String {
                stringify!($created).into()
            }
            fn event_version(&self) -> String {
                "1".into()
            }
        }

        $(#[$doc])*
        #[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
        pub struct $aggregate {
            /// What it was created with.
            pub terms: Option<Box<$terms>>,
        }

        impl cqrs_es::Aggregate for $aggregate {
            const TYPE: &'static str = $type;
            type Command = $command;
            type Event = $event;
            type Error = $crate::review::ReviewError;
            type Services = ();

            async fn handle(
                &mut self,
                command: Self::Command,
                _: &(),
                sink: &cqrs_es::event_sink::EventSink<Self>,
            ) -> Result<(), Self::Error> {
                let $command::Create(terms) = command;
                if self.terms.is_none() {
                    let terms = Box::new(terms.check()?);
                    sink.write($event::$created(terms), self).await;
                }
                Ok(())
            }

            fn apply(&mut self, event: Self::Event) {
                let $event::$created(terms) = event;
                self.terms = Some(terms);
            }
        }

        impl $crate::AggregateExt for $aggregate {}
    };
}
use created_once;

/// A name of 1..[`MAX_NAME`] characters, trimmed.
pub(crate) fn check_name(what: &str, name: &str) -> Result<String, ReviewError> {
    let name = name.trim();
    if name.is_empty() || name.chars().count() > MAX_NAME {
        return Err(ReviewError::Invalid(format!(
            "{what} must be 1..{MAX_NAME} characters"
        )));
    }
    Ok(name.to_string())
}
