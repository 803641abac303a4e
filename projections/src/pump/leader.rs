//! Leadership: only one process pumps a database.
//!
//! The leader holds a session-level advisory lock on a connection of its own, for as
//! long as it lives: cycles need no lock statement, and if the process dies its
//! connection closes and another process takes over at its next attempt.

use sqlx::{ConnectOptions, Connection, PgConnection, PgPool};
use std::time::{Duration, Instant};

/// Advisory lock key held by the process that pumps.
const PUMP_LOCK: i64 = 0x5A4D_B0C5;

/// How long a process that is not the leader waits before asking again.
const RETRY_AFTER: Duration = Duration::from_millis(500);

/// This process's leadership state.
#[derive(Default)]
pub(super) struct Leader {
    connection: Option<PgConnection>,
    last_attempt: Option<Instant>,
}

impl Leader {
    /// The leader's connection, taking the lock first when it is free.
    pub(super) async fn connection(
        &mut self,
        pool: &PgPool,
    ) -> anyhow::Result<Option<&mut PgConnection>> {
        if self.connection.is_none() {
            if self
                .last_attempt
                .is_some_and(|at| at.elapsed() < RETRY_AFTER)
            {
                return Ok(None);
            }
            self.last_attempt = Some(Instant::now());
            let mut connection = pool.connect_options().connect().await?;
            let locked: bool = sqlx::query_scalar("SELECT pg_try_advisory_lock($1)")
                .bind(PUMP_LOCK)
                .fetch_one(&mut connection)
                .await?;
            if !locked {
                connection.close().await?;
                return Ok(None);
            }
            // The cycle's statements bind arrays (the seal's rows, a projection's
            // keys), for which PostgreSQL keeps choosing custom plans and so plans
            // them again at every execution: an eighth of the pump's database time
            // under single-event commands. Their generic plans (index lookups per key) are the right
            // ones whatever the batch's size.
            sqlx::query("SET plan_cache_mode = force_generic_plan")
                .execute(&mut connection)
                .await?;
            self.connection = Some(connection);
        }
        Ok(self.connection.as_mut())
    }

    /// Gives up leadership (after an error, the connection may be broken); the lock
    /// goes with the connection.
    pub(super) fn resign(&mut self) {
        self.connection = None;
        self.last_attempt = None;
    }
}
