//! Serialized admission checks for invariants that span aggregates (the active
//! environment limit, staging slots, upload rate, build and run queues, an
//! attachment file's upload against its deletion).
//!
//! The check and the command run while a transaction-level advisory lock on
//! (company, purpose) is held (waiters of one process queue in front of it), so
//! two concurrent requests cannot both pass a check that only one of them may
//! pass. The next holder counts the first one's result: the command waits for the
//! read models before releasing the lock, or the check counts what the log holds
//! beyond them (run submissions). The lock's transaction writes nothing and takes
//! no transaction id, so it never holds back the sealer.

use sha2::{Digest, Sha256};
use sqlx::{PgPool, Postgres, Transaction};
use std::collections::HashMap;
use std::sync::{Arc, LazyLock, Mutex};
use std::time::Duration;
use tokio::sync::OwnedMutexGuard;
use uuid::Uuid;

/// The queue of this process in front of each lock: requests of one node wait
/// their turn here and are woken the moment the previous holder is done, instead
/// of polling the database with growing pauses; only the head of the queue asks
/// PostgreSQL (where it contends with other nodes only).
static QUEUES: LazyLock<Mutex<HashMap<i64, Arc<tokio::sync::Mutex<()>>>>> =
    LazyLock::new(Default::default);

/// A held admission lock; released when dropped.
pub struct AdmissionLock {
    held: Option<(Transaction<'static, Postgres>, Turn)>,
}

impl Drop for AdmissionLock {
    /// Rolls the lock's transaction back, which releases the database lock, and only
    /// then wakes the next waiter of this process, whose first try then succeeds.
    fn drop(&mut self) {
        let Some((tx, turn)) = self.held.take() else {
            return;
        };
        // Outside a runtime (at its shutdown) the pool closes the connection instead.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                // A failed rollback means a lost connection, whose session (and lock)
                // PostgreSQL ends by itself.
                if let Err(error) = tx.rollback().await {
                    tracing::debug!(%error, "an admission lock's rollback failed");
                }
                drop(turn);
            });
        }
    }
}

/// A place at the head of this process's queue of one lock.
struct Turn {
    guard: Option<OwnedMutexGuard<()>>,
    key: i64,
}

impl Turn {
    /// Waits until every earlier waiter of this process is done.
    async fn take(key: i64) -> Turn {
        let queue = QUEUES
            .lock()
            .expect("the admission queues are not poisoned")
            .entry(key)
            .or_default()
            .clone();
        Turn {
            guard: Some(queue.lock_owned().await),
            key,
        }
    }
}

impl Drop for Turn {
    /// Gives the turn to the next waiter and forgets the queue once nobody else
    /// holds or waits for it.
    fn drop(&mut self) {
        drop(self.guard.take());
        let mut queues = QUEUES
            .lock()
            .expect("the admission queues are not poisoned");
        if queues
            .get(&self.key)
            .is_some_and(|queue| Arc::strong_count(queue) == 1)
        {
            queues.remove(&self.key);
        }
    }
}

/// Waits for and takes the lock of `purpose` for `company`. A waiter holds no
/// connection while it waits (it queues in this process, then tries, gives its
/// connection back and sleeps while another node holds the lock), so many requests
/// queued behind one lock cannot take every connection of the pool from the holder,
/// which needs more to finish.
pub async fn lock(pool: &PgPool, company: Uuid, purpose: &str) -> sqlx::Result<AdmissionLock> {
    let locked = lock_while(pool, company, purpose, || true).await?;
    Ok(locked.expect("a lock wanted throughout is taken"))
}

/// The lock of one stored object of a company that the janitor deletes when
/// nothing holds it, while a request may put the same bytes in place again (a
/// table attachment file, a run's content-addressed inputs file): the writer holds
/// it while it puts the bytes in place (and, for an attachment, records them), the
/// janitor while it checks that nothing holds the object and deletes it, so neither
/// undoes the other.
pub async fn object_lock(pool: &PgPool, company: Uuid, key: &str) -> sqlx::Result<AdmissionLock> {
    lock(pool, company, &format!("object {key}")).await
}

/// [`lock`] for a waiter whose work an earlier holder may do for it (a batch):
/// when its turn in this process comes and `wanted` says the work is done, it
/// gives the turn on without asking PostgreSQL (`None`).
pub async fn lock_while(
    pool: &PgPool,
    company: Uuid,
    purpose: &str,
    wanted: impl Fn() -> bool,
) -> sqlx::Result<Option<AdmissionLock>> {
    let digest = Sha256::digest(format!("{company}/{purpose}"));
    let key = i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"));
    let turn = Turn::take(key).await;
    let mut pause = Duration::from_millis(2);
    loop {
        if !wanted() {
            return Ok(None);
        }
        let mut tx = pool.begin().await?;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(key)
            .fetch_one(&mut *tx)
            .await?;
        if taken {
            return Ok(Some(AdmissionLock {
                held: Some((tx, turn)),
            }));
        }
        tx.rollback().await?;
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}
