//! The context upload session: one archive sent in a single PUT, validated on
//! `complete`, then kept as an owned object.
//!
//! States (spec section 3): `uploading` after init, `completing` once a complete has
//! begun (a failed complete stays there, so it can be retried or aborted),
//! `completed`, `aborted`. A session expires 24 hours after init. The PUT capability
//! is valid 15 minutes; only its SHA-256 is kept.

use super::archive::ArchiveFormat;
use crate::AggregateExt;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Largest archive a tenant may declare (1 GiB).
pub const MAX_DECLARED_BYTES: i64 = 1 << 30;
/// How long the upload capability is valid.
pub const CAPABILITY_TTL_SECONDS: i64 = 15 * 60;
/// How long a session lives.
pub const SESSION_TTL_SECONDS: i64 = 24 * 60 * 60;

/// Session states a tenant sees.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum UploadState {
    /// Waiting for bytes.
    #[default]
    Uploading,
    /// Complete started; validation failed or is running.
    Completing,
    /// Validated and stored.
    Completed,
    /// Abort requested.
    AbortPending,
    /// Aborted or expired.
    Aborted,
}

impl UploadState {
    /// Whether the session still holds a staging slot.
    pub fn is_live(self) -> bool {
        matches!(self, Self::Uploading | Self::Completing)
    }
}

/// The facts of a new session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UploadInitiated {
    /// The session id.
    pub session_id: Uuid,
    /// Its environment.
    pub environment_id: Uuid,
    /// Its company.
    pub company_id: Uuid,
    /// Bytes the tenant will send at most.
    pub declared_bytes: i64,
    /// Archive format.
    pub archive_format: ArchiveFormat,
    /// Hex SHA-256 of the upload capability.
    pub capability_sha256: String,
    /// When the capability stops working.
    pub capability_expires_at: DateTime<Utc>,
    /// When the session expires.
    pub expires_at: DateTime<Utc>,
}

/// The bytes of a PUT, as stored in the staging area.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StagedBytes {
    /// Bytes received.
    pub byte_size: i64,
    /// `sha256:<hex>` of them.
    pub digest: String,
    /// Where they are staged in the object store.
    pub staging_key: String,
}

/// Commands of [`ContextUpload`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum UploadCommand {
    /// Opens the session.
    Initiate(UploadInitiated),
    /// Records the bytes of a PUT made with the given capability.
    ReceiveBytes {
        /// SHA-256 of the capability presented.
        capability_sha256: String,
        /// When the PUT arrived.
        now: DateTime<Utc>,
        /// The bytes.
        staged: StagedBytes,
    },
    /// Starts completing (validation runs outside).
    BeginCompletion {
        /// When.
        now: DateTime<Utc>,
    },
    /// Validation failed; the session stays `completing`.
    FailCompletion {
        /// The rule that refused the archive.
        error_detail: String,
        /// A readable explanation.
        message: String,
    },
    /// Validation passed and the archive is an owned object.
    Complete {
        /// The object.
        owned_object_id: Uuid,
    },
    /// Gives the session up.
    Abort,
    /// Ends a session past its lifetime.
    Expire {
        /// The current time.
        now: DateTime<Utc>,
    },
}

/// Events of [`ContextUpload`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum UploadEvent {
    /// A session was opened.
    UploadInitiated(UploadInitiated),
    /// Bytes arrived.
    UploadBytesReceived(StagedBytes),
    /// Completion started.
    UploadCompletionStarted,
    /// Validation refused the archive.
    UploadCompletionFailed {
        /// The rule.
        error_detail: String,
        /// Explanation.
        message: String,
    },
    /// The archive is stored as an owned object.
    UploadCompleted {
        /// The object.
        owned_object_id: Uuid,
    },
    /// The tenant aborted.
    UploadAborted,
    /// The session outlived its 24 hours.
    UploadExpired,
}

impl DomainEvent for UploadEvent {
    fn event_type(&self) -> String {
        match self {
            Self::UploadInitiated(_) => "UploadInitiated",
            Self::UploadBytesReceived(_) => "UploadBytesReceived",
            Self::UploadCompletionStarted => "UploadCompletionStarted",
            Self::UploadCompletionFailed { .. } => "UploadCompletionFailed",
            Self::UploadCompleted { .. } => "UploadCompleted",
            Self::UploadAborted => "UploadAborted",
            Self::UploadExpired => "UploadExpired",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of upload commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UploadError {
    /// No such session.
    #[error("upload session not found")]
    NotFound,
    /// The capability is not this session's, or expired.
    #[error("the upload capability does not match this session or has expired")]
    CapabilityFenced,
    /// The session does not accept this step in its state.
    #[error("the upload session is {0:?} and does not accept this request")]
    WrongState(UploadState),
    /// Complete before any bytes.
    #[error("no bytes were uploaded")]
    NothingUploaded,
    /// The session is past its 24 hours.
    #[error("the upload session has expired")]
    Expired,
}

impl SpecError for UploadError {
    fn code(&self) -> Code {
        match self {
            Self::NotFound => Code::NotFound,
            Self::CapabilityFenced => Code::CapabilityFenced,
            Self::WrongState(_) => Code::UploadStateConflict,
            Self::NothingUploaded => Code::UploadIncomplete,
            Self::Expired => Code::UploadExpired,
        }
    }
}

/// A context upload session.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContextUpload {
    /// The opening facts.
    pub initiated: Option<UploadInitiated>,
    /// State.
    pub state: UploadState,
    /// The bytes of the last PUT.
    pub staged: Option<StagedBytes>,
    /// The owned object, once completed.
    pub owned_object_id: Option<Uuid>,
    /// The last validation failure.
    pub error_detail: Option<String>,
}

impl ContextUpload {
    /// Checks a PUT before its body is read: the capability must be this session's
    /// and unexpired, and the session must accept bytes.
    pub fn admit_put(
        &self,
        capability_sha256: &str,
        now: DateTime<Utc>,
    ) -> Result<(), UploadError> {
        let initiated = self.initiated.as_ref().ok_or(UploadError::NotFound)?;
        if initiated.capability_sha256 != capability_sha256 || now > initiated.capability_expires_at
        {
            return Err(UploadError::CapabilityFenced);
        }
        if now > initiated.expires_at {
            return Err(UploadError::Expired);
        }
        if self.state != UploadState::Uploading {
            return Err(UploadError::WrongState(self.state));
        }
        Ok(())
    }
}

impl Aggregate for ContextUpload {
    const TYPE: &'static str = "context_upload";
    type Command = UploadCommand;
    type Event = UploadEvent;
    type Error = UploadError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        if let UploadCommand::Initiate(initiated) = command {
            if self.initiated.is_none() {
                sink.write(UploadEvent::UploadInitiated(initiated), self)
                    .await;
            }
            return Ok(());
        }
        let initiated = self.initiated.clone().ok_or(UploadError::NotFound)?;
        match command {
            UploadCommand::Initiate(_) => unreachable!("handled above"),
            UploadCommand::ReceiveBytes {
                capability_sha256,
                now,
                staged,
            } => {
                self.admit_put(&capability_sha256, now)?;
                sink.write(UploadEvent::UploadBytesReceived(staged), self)
                    .await;
            }
            UploadCommand::BeginCompletion { now } => match self.state {
                UploadState::Uploading => {
                    if now > initiated.expires_at {
                        return Err(UploadError::Expired);
                    }
                    if self.staged.is_none() {
                        return Err(UploadError::NothingUploaded);
                    }
                    sink.write(UploadEvent::UploadCompletionStarted, self).await;
                }
                UploadState::Completing => {}
                state => return Err(UploadError::WrongState(state)),
            },
            UploadCommand::FailCompletion {
                error_detail,
                message,
            } => {
                if self.state != UploadState::Completing {
                    return Err(UploadError::WrongState(self.state));
                }
                sink.write(
                    UploadEvent::UploadCompletionFailed {
                        error_detail,
                        message,
                    },
                    self,
                )
                .await;
            }
            UploadCommand::Complete { owned_object_id } => {
                if self.state != UploadState::Completing {
                    return Err(UploadError::WrongState(self.state));
                }
                sink.write(UploadEvent::UploadCompleted { owned_object_id }, self)
                    .await;
            }
            UploadCommand::Abort => match self.state {
                UploadState::Uploading | UploadState::Completing | UploadState::AbortPending => {
                    sink.write(UploadEvent::UploadAborted, self).await
                }
                UploadState::Aborted => {}
                UploadState::Completed => return Err(UploadError::WrongState(self.state)),
            },
            UploadCommand::Expire { now } => {
                if self.state.is_live() && now > initiated.expires_at {
                    sink.write(UploadEvent::UploadExpired, self).await;
                }
            }
        }
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        match event {
            UploadEvent::UploadInitiated(initiated) => self.initiated = Some(initiated),
            UploadEvent::UploadBytesReceived(staged) => self.staged = Some(staged),
            UploadEvent::UploadCompletionStarted => self.state = UploadState::Completing,
            UploadEvent::UploadCompletionFailed { error_detail, .. } => {
                self.error_detail = Some(error_detail)
            }
            UploadEvent::UploadCompleted { owned_object_id } => {
                self.state = UploadState::Completed;
                self.owned_object_id = Some(owned_object_id);
                self.error_detail = None;
            }
            UploadEvent::UploadAborted | UploadEvent::UploadExpired => {
                self.state = UploadState::Aborted
            }
        }
    }
}

impl AggregateExt for ContextUpload {}

#[cfg(test)]
mod tests {
    use super::*;
    use cqrs_es::test::TestFramework;

    fn t(seconds: i64) -> DateTime<Utc> {
        DateTime::from_timestamp(1_700_000_000 + seconds, 0).unwrap()
    }

    fn initiated() -> UploadEvent {
        UploadEvent::UploadInitiated(UploadInitiated {
            session_id: Uuid::from_u128(1),
            environment_id: Uuid::from_u128(2),
            company_id: Uuid::from_u128(3),
            declared_bytes: 100,
            archive_format: ArchiveFormat::TarGz,
            capability_sha256: "cap".into(),
            capability_expires_at: t(CAPABILITY_TTL_SECONDS),
            expires_at: t(SESSION_TTL_SECONDS),
        })
    }

    fn staged() -> StagedBytes {
        StagedBytes {
            byte_size: 10,
            digest: "sha256:x".into(),
            staging_key: "staging/1".into(),
        }
    }

    #[test]
    fn a_put_needs_this_sessions_unexpired_capability() {
        let put = |capability: &str, now| UploadCommand::ReceiveBytes {
            capability_sha256: capability.into(),
            now,
            staged: staged(),
        };
        TestFramework::<ContextUpload>::with(())
            .given(vec![initiated()])
            .when(put("other", t(1)))
            .then_expect_error(UploadError::CapabilityFenced);
        TestFramework::<ContextUpload>::with(())
            .given(vec![initiated()])
            .when(put("cap", t(CAPABILITY_TTL_SECONDS + 1)))
            .then_expect_error(UploadError::CapabilityFenced);
        TestFramework::<ContextUpload>::with(())
            .given(vec![initiated()])
            .when(put("cap", t(1)))
            .then_expect_events(vec![UploadEvent::UploadBytesReceived(staged())]);
    }

    #[test]
    fn a_failed_complete_stays_completing_and_can_be_retried_or_aborted() {
        let given = vec![
            initiated(),
            UploadEvent::UploadBytesReceived(staged()),
            UploadEvent::UploadCompletionStarted,
            UploadEvent::UploadCompletionFailed {
                error_detail: "dockerfile_missing".into(),
                message: "m".into(),
            },
        ];
        TestFramework::<ContextUpload>::with(())
            .given(given.clone())
            .when(UploadCommand::BeginCompletion { now: t(2) })
            .then_expect_events(vec![]);
        TestFramework::<ContextUpload>::with(())
            .given(given)
            .when(UploadCommand::Abort)
            .then_expect_events(vec![UploadEvent::UploadAborted]);
    }

    #[test]
    fn completing_needs_bytes_and_sessions_expire() {
        TestFramework::<ContextUpload>::with(())
            .given(vec![initiated()])
            .when(UploadCommand::BeginCompletion { now: t(2) })
            .then_expect_error(UploadError::NothingUploaded);
        TestFramework::<ContextUpload>::with(())
            .given(vec![initiated()])
            .when(UploadCommand::Expire {
                now: t(SESSION_TTL_SECONDS + 1),
            })
            .then_expect_events(vec![UploadEvent::UploadExpired]);
    }
}
