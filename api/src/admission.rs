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
use uuid::Uuid;

/// A held admission lock; released when dropped.
pub struct AdmissionLock {
    _tx: Transaction<'static, Postgres>,
}

/// Waits for and takes the lock of `purpose` for `company`.
pub async fn lock(pool: &PgPool, company: Uuid, purpose: &str) -> sqlx::Result<AdmissionLock> {
    let digest = Sha256::digest(format!("{company}/{purpose}"));
    let key = i64::from_be_bytes(digest[..8].try_into().expect("eight bytes"));
    let mut tx = pool.begin().await?;
    sqlx::query("SELECT pg_advisory_xact_lock($1)")
        .bind(key)
        .execute(&mut *tx)
        .await?;
    Ok(AdmissionLock { _tx: tx })
}
