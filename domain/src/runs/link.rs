//! The PublicLink aggregate: the permanent public links of one run object (its log,
//! its output, or one artifact file), one generation at a time. Its id is derived
//! from (run, object kind, artifact), so minting is idempotent; after a revoke the
//! next mint is a new generation with a new random link id, hence a new token.
//!
//! The token is never stored: the API derives it from the link id with a server key
//! (`api::links`).

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// What a public link serves.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LinkedObject {
    /// The run's log.
    Log,
    /// The run's output file.
    Output,
    /// One artifact file.
    Artifact,
}

impl LinkedObject {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Log => "log",
            Self::Output => "output",
            Self::Artifact => "artifact",
        }
    }
}

/// The aggregate id of the links of one object.
pub fn link_aggregate_id(run_id: Uuid, object: LinkedObject, artifact_id: Option<Uuid>) -> Uuid {
    crate::ids::derive(
        "public_link",
        &[
            &run_id.to_string(),
            object.as_str(),
            &artifact_id.map(|a| a.to_string()).unwrap_or_default(),
        ],
    )
}

/// Commands of [`PublicLink`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkCommand {
    /// Mints a link unless one is live.
    Mint {
        /// A fresh random id for the link, used when a new one is minted.
        link_id: Uuid,
        /// The run.
        run_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// What it serves.
        object: LinkedObject,
        /// The artifact, for artifact links.
        artifact_id: Option<Uuid>,
    },
    /// Revokes the live link, if any.
    Revoke,
}

/// Events of [`PublicLink`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum LinkEvent {
    /// A link is live.
    PublicLinkMinted {
        /// The link (one per generation).
        link_id: Uuid,
        /// 1, then one more per mint after a revoke.
        generation: i64,
        /// The run.
        run_id: Uuid,
        /// Its company.
        company_id: Uuid,
        /// `log`, `output` or `artifact`.
        object: LinkedObject,
        /// The artifact, for artifact links.
        artifact_id: Option<Uuid>,
    },
    /// The link no longer serves.
    PublicLinkRevoked {
        /// The link.
        link_id: Uuid,
    },
}

impl DomainEvent for LinkEvent {
    fn event_type(&self) -> String {
        match self {
            Self::PublicLinkMinted { .. } => "PublicLinkMinted",
            Self::PublicLinkRevoked { .. } => "PublicLinkRevoked",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Link commands never fail; the type exists for the framework.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("public link refused")]
pub struct LinkError;

impl SpecError for LinkError {
    fn code(&self) -> Code {
        Code::IllegalStateTransition
    }
}

/// The links of one object.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PublicLink {
    /// Generations so far.
    pub generation: i64,
    /// The live link.
    pub live: Option<Uuid>,
}

impl Aggregate for PublicLink {
    const TYPE: &'static str = "public_link";
    type Command = LinkCommand;
    type Event = LinkEvent;
    type Error = LinkError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            LinkCommand::Mint { .. } if self.live.is_some() => return Ok(()),
            LinkCommand::Mint {
                link_id,
                run_id,
                company_id,
                object,
                artifact_id,
            } => {
                let generation = self.generation + 1;
                LinkEvent::PublicLinkMinted {
                    link_id,
                    generation,
                    run_id,
                    company_id,
                    object,
                    artifact_id,
                }
            }
            LinkCommand::Revoke => match self.live {
                Some(link_id) => LinkEvent::PublicLinkRevoked { link_id },
                None => return Ok(()),
            },
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            LinkEvent::PublicLinkMinted {
                link_id,
                generation,
                ..
            } => {
                self.generation = generation;
                self.live = Some(link_id);
            }
            LinkEvent::PublicLinkRevoked { .. } => self.live = None,
        }
    }
}

impl AggregateExt for PublicLink {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn mint() -> LinkCommand {
        LinkCommand::Mint {
            link_id: Uuid::from_u128(10 + 2),
            run_id: Uuid::from_u128(1),
            company_id: Uuid::from_u128(2),
            object: LinkedObject::Log,
            artifact_id: None,
        }
    }

    fn minted(generation: i64) -> LinkEvent {
        LinkEvent::PublicLinkMinted {
            link_id: Uuid::from_u128(10 + generation as u128),
            generation,
            run_id: Uuid::from_u128(1),
            company_id: Uuid::from_u128(2),
            object: LinkedObject::Log,
            artifact_id: None,
        }
    }

    #[test]
    fn minting_is_idempotent_and_a_mint_after_a_revoke_is_new() {
        TestFramework::<PublicLink>::with(())
            .given(vec![minted(1)])
            .when(mint())
            .then_expect_events(vec![]);
        let LinkEvent::PublicLinkMinted { link_id, .. } = minted(1) else {
            unreachable!()
        };
        TestFramework::<PublicLink>::with(())
            .given(vec![minted(1), LinkEvent::PublicLinkRevoked { link_id }])
            .when(mint())
            .then_expect_events(vec![minted(2)]);
    }
}
