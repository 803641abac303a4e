//! Signals between the processes that share a database, over PostgreSQL's
//! `LISTEN`/`NOTIFY`: a process that is not the leader tells the leader it appended
//! (so the leader runs a cycle now instead of at its next poll), and the leader tells
//! every process a cycle committed (so a request waiting on another node reads the
//! checkpoints now instead of at its next poll) — only while another process
//! signalled appends in the last minute, so a single node sends nothing. Polling stays the fallback: a
//! signal lost while a listener reconnects only costs a poll interval.

use super::Pump;
use sqlx::postgres::PgListener;
use sqlx::{PgConnection, PgPool};
use std::sync::Weak;
use std::time::Duration;
use tokio_util::sync::CancellationToken;

/// The channel every process listens on.
const CHANNEL: &str = "sandbox_pump";
/// Payload: events were appended by a process that does not pump; followed by
/// `:` and the sending pump's origin, so a process ignores its own signal (it
/// kicked its pump directly, and hearing itself would make it believe another
/// process waits for its cycles).
const APPENDED: &str = "appended";
/// Payload: a cycle sealed or projected events.
const PROJECTED: &str = "projected";

/// Tells the leader that events were appended (sent by a process that is not it,
/// or not yet sure it is).
pub(super) async fn appended(pool: &PgPool, origin: &str) -> sqlx::Result<()> {
    notify(pool, &format!("{APPENDED}:{origin}")).await
}

/// Whether a payload is an append signal sent by another process than `origin`
/// (a bare `appended`, from a node of an older release, counts as another's).
fn appended_elsewhere(payload: &str, origin: &str) -> bool {
    payload
        .strip_prefix(APPENDED)
        .is_some_and(|sender| sender.strip_prefix(':') != Some(origin))
}

/// Tells every process that a cycle committed; sent inside the cycle's transaction,
/// so it is delivered when (and only if) the cycle commits.
pub(super) async fn projected(tx: &mut PgConnection) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(PROJECTED)
        .execute(tx)
        .await?;
    Ok(())
}

async fn notify(pool: &PgPool, payload: &str) -> sqlx::Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(CHANNEL)
        .bind(payload)
        .execute(pool)
        .await?;
    Ok(())
}

/// Listens until `cancel` fires (or the pump is gone): an append elsewhere kicks
/// this process's pump, a committed cycle elsewhere wakes its waiting requests.
pub(super) async fn listen(pump: Weak<Pump>, pool: PgPool, cancel: CancellationToken) {
    loop {
        let mut listener = match connect(&pool).await {
            Ok(listener) => listener,
            Err(error) => {
                crate::db::connection_lost();
                tracing::warn!(%error, "cannot listen for pump signals; polling only");
                tokio::select! {
                    _ = cancel.cancelled() => return,
                    _ = tokio::time::sleep(Duration::from_secs(1)) => continue,
                }
            }
        };
        loop {
            let received = tokio::select! {
                _ = cancel.cancelled() => return,
                received = listener.try_recv() => received,
            };
            let Some(pump) = pump.upgrade() else { return };
            match received {
                Ok(Some(notification)) => match notification.payload() {
                    PROJECTED => pump.elsewhere.notify_waiters(),
                    payload if appended_elsewhere(payload, &pump.origin) => {
                        pump.heard_append();
                        pump.kick();
                    }
                    _ => {}
                },
                // The connection was lost and is re-established by the listener:
                // what was sent meanwhile is lost, so every waiter looks now; the
                // pool's other connections may be lost too.
                Ok(None) => {
                    crate::db::connection_lost();
                    pump.elsewhere.notify_waiters();
                }
                Err(error) => {
                    crate::db::connection_lost();
                    tracing::warn!(%error, "pump signals interrupted");
                    break;
                }
            }
        }
    }
}

async fn connect(pool: &PgPool) -> sqlx::Result<PgListener> {
    let mut listener = PgListener::connect_with(pool).await?;
    // Report a lost connection before reconnecting (sqlx reconnects inside
    // `try_recv` by default, so the report waited for a new connection).
    listener.eager_reconnect(false);
    listener.listen(CHANNEL).await?;
    Ok(listener)
}

#[cfg(test)]
mod tests {
    use super::appended_elsewhere;

    #[test]
    fn a_process_does_not_hear_its_own_append_signal() {
        assert!(!appended_elsewhere("appended:a1", "a1"));
        assert!(appended_elsewhere("appended:b2", "a1"));
        assert!(appended_elsewhere("appended", "a1"));
        assert!(!appended_elsewhere("projected", "a1"));
    }
}
