//! Serialized admission checks for invariants that span aggregates (the active
//! environment limit, staging slots, upload rate, build and run queues).
//!
//! The check and the command run while a transaction-level advisory lock on
//! (company, purpose) is held, so two concurrent requests cannot both pass a check
//! that only one of them may pass. The command waits for the read models before
//! returning, so the next holder of the lock counts the first one's result. The
//! lock's transaction writes nothing and takes no transaction id, so it never holds
//! back the sealer.

use sha2::{Digest, Sha256};
use sqlx::{PgPool, Postgres, Transaction};
use std::time::Duration;
use uuid::Uuid;

/// A held admission lock; released when dropped.
pub struct AdmissionLock {
    _tx: Transaction<'static, Postgres>,
}

/// Waits for and takes the lock of `purpose` for `company`. A waiter holds no
/// connection while it waits (it tries, gives its connection back and sleeps), so
/// many requests queued behind one lock cannot take every connection of the pool
/// from the holder, which needs more to finish.
pub async fn lock(pool: &PgPool, company: Uuid, purpose: &str) -> sqlx::Result<AdmissionLock> {
    let digest = Sha256::digest(format!("{company}/{purpose}"));
    let key = i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"));
    let mut pause = Duration::from_millis(2);
    loop {
        let mut tx = pool.begin().await?;
        let taken: bool = sqlx::query_scalar("SELECT pg_try_advisory_xact_lock($1)")
            .bind(key)
            .fetch_one(&mut *tx)
            .await?;
        if taken {
            return Ok(AdmissionLock { _tx: tx });
        }
        tx.rollback().await?;
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}
