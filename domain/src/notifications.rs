//! A user's notification inbox (the notification center of spec section 6): the
//! notifications themselves are derived from the log by the `notifications`
//! projection; what a user has read is recorded here, as events of the user's
//! inbox, so read state survives rebuilds like everything else.

use crate::AggregateExt;
use crate::error::{Code, SpecError};
use chrono::{DateTime, Utc};
use cqrs_es::event_sink::EventSink;
use cqrs_es::{Aggregate, DomainEvent};
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// Most notifications one call marks read by id.
pub const MAX_MARKED: usize = 100;

/// Commands of [`NotificationInbox`].
#[derive(Debug, Clone, PartialEq)]
pub enum InboxCommand {
    /// Marks notifications read (1..[`MAX_MARKED`] ids of the user's).
    MarkRead {
        /// The user.
        user_id: Uuid,
        /// The notifications.
        ids: Vec<Uuid>,
    },
    /// Marks every notification the user can see up to a log position read.
    MarkAllRead {
        /// The user.
        user_id: Uuid,
        /// When.
        until: DateTime<Utc>,
        /// Notifications raised at or before this log position are read (one raised
        /// later is unread, whatever its time says).
        up_to_position: i64,
    },
}

/// Events of [`NotificationInbox`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub enum InboxEvent {
    /// The user read these notifications.
    NotificationsRead {
        /// The user.
        user_id: Uuid,
        /// The notifications.
        ids: Vec<Uuid>,
    },
    /// The user read everything up to a log position.
    AllNotificationsRead {
        /// The user.
        user_id: Uuid,
        /// When; marks recorded without a position read everything created at or
        /// before it.
        until: DateTime<Utc>,
        /// Notifications raised at or before this log position are read.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        up_to_position: Option<i64>,
    },
}

impl DomainEvent for InboxEvent {
    fn event_type(&self) -> String {
        match self {
            Self::NotificationsRead { .. } => "NotificationsRead",
            Self::AllNotificationsRead { .. } => "AllNotificationsRead",
        }
        .into()
    }
    fn event_version(&self) -> String {
        "1".into()
    }
}

/// Refusals of inbox commands.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InboxError {
    /// No ids, or too many.
    #[error("name 1..100 notifications")]
    Ids,
}

impl SpecError for InboxError {
    fn code(&self) -> Code {
        Code::InvalidBody
    }
}

/// A user's inbox: only the newest "read up to" mark is state.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct NotificationInbox {
    /// When everything was last marked read.
    pub read_until: Option<DateTime<Utc>>,
    /// Up to which log position.
    #[serde(default)]
    pub read_up_to: Option<i64>,
}

impl Aggregate for NotificationInbox {
    const TYPE: &'static str = "notification_inbox";
    type Command = InboxCommand;
    type Event = InboxEvent;
    type Error = InboxError;
    type Services = ();

    async fn handle(
        &mut self,
        command: Self::Command,
        _: &(),
        sink: &EventSink<Self>,
    ) -> Result<(), Self::Error> {
        let event = match command {
            InboxCommand::MarkRead { user_id, mut ids } => {
                ids.sort();
                ids.dedup();
                if ids.is_empty() || ids.len() > MAX_MARKED {
                    return Err(InboxError::Ids);
                }
                InboxEvent::NotificationsRead { user_id, ids }
            }
            InboxCommand::MarkAllRead {
                user_id,
                until,
                up_to_position,
            } => {
                if self.read_up_to.is_some_and(|p| p >= up_to_position) {
                    return Ok(());
                }
                InboxEvent::AllNotificationsRead {
                    user_id,
                    until,
                    up_to_position: Some(up_to_position),
                }
            }
        };
        sink.write(event, self).await;
        Ok(())
    }

    fn apply(&mut self, event: Self::Event) {
        if let InboxEvent::AllNotificationsRead {
            until,
            up_to_position,
            ..
        } = event
        {
            self.read_until = Some(until);
            self.read_up_to = up_to_position.or(self.read_up_to);
        }
    }
}

impl AggregateExt for NotificationInbox {}
