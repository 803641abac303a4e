//! The projection contract.

use crate::log::StoredEvent;
use async_trait::async_trait;
use sqlx::PgConnection;

/// A read model derived from the log.
///
/// `apply` receives a batch of consecutive events and writes its tables through the
/// given connection, inside the pump's transaction: the pump records the new
/// checkpoint in the same transaction, so a batch is applied exactly once. Table names
/// are unqualified so a rebuild can run the same code against shadow tables by
/// changing the `search_path`.
#[async_trait]
pub trait Projection: Send + Sync {
    /// Stable name, used as the checkpoint key.
    fn name(&self) -> &'static str;

    /// The tables this projection owns (rebuilds and digests use them).
    fn tables(&self) -> &'static [&'static str];

    /// The aggregate types whose events it reads. A batch without any of them only
    /// moves the checkpoint.
    fn aggregate_types(&self) -> &'static [&'static str];

    /// Applies a batch of events in log order.
    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()>;
}
