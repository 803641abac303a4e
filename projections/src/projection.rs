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

    /// Every table the projection owns in `schema`: [`Projection::tables`] plus any
    /// it creates while projecting (custom tables' `ct_<id>`). Rebuilds swap and
    /// drop these, digests and replays read them.
    async fn owned_tables(
        &self,
        _conn: &mut PgConnection,
        _schema: &str,
    ) -> anyhow::Result<Vec<String>> {
        Ok(self.tables().iter().map(|t| t.to_string()).collect())
    }

    /// Whether `apply` calls SQL functions of the live schema (custom tables'
    /// `ct_as_*` conversions). A rebuild then searches the live schema after the
    /// shadow one; every table such a projection writes exists in the shadow first.
    fn calls_live_functions(&self) -> bool {
        false
    }

    /// Applies a batch of events in log order.
    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()>;

    /// A fold that holds the whole read model in memory, for a rebuild starting from
    /// empty tables; `None` (the default) when the projection has none, or its rows
    /// would not fit in memory. See [`MemoryFold`].
    fn memory_fold(&self) -> Option<Box<dyn MemoryFold>> {
        None
    }
}

/// A rebuild's fold of many batches in memory, written to the (empty) shadow tables
/// once.
///
/// Batch by batch, `apply` loads the rows a batch touches and writes them back, so a
/// row touched in every batch is read and rewritten every time, and the tables' index
/// churn grows with it. A rebuild from position 0 knows the tables are empty and only
/// it writes them: folding the log into rows held in memory and writing each
/// surviving row once does the same work in a fraction of the statements
/// (`sandboxctl bench rebuild`: the directory at 1,000,000 events ~2.5x faster). The
/// fold must give exactly the rows `apply` would have left.
#[async_trait]
pub trait MemoryFold: Send {
    /// Folds a batch of events, in log order, into the rows held.
    fn fold(&mut self, events: &[StoredEvent]) -> anyhow::Result<()>;

    /// The rows held, which the rebuild bounds (past the bound it writes them and
    /// goes on batch by batch).
    fn rows(&self) -> usize;

    /// Writes every row held into the projection's tables, which are empty.
    async fn write(self: Box<Self>, conn: &mut PgConnection) -> anyhow::Result<()>;
}
