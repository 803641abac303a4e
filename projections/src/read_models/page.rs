//! What list queries share: the lifecycle filter and the keyset window.

use serde::Deserialize;

/// `lifecycle` of list queries (`SandboxLifecycleFilter`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LifecycleFilter {
    /// Live items only (the default of most lists).
    #[default]
    Active,
    /// Retired (archived or revoked) items only.
    Retired,
    /// Everything.
    All,
}

impl LifecycleFilter {
    /// Whether an item with this liveness passes the filter.
    pub fn admits(self, live: bool) -> bool {
        match self {
            Self::Active => live,
            Self::Retired => !live,
            Self::All => true,
        }
    }
}

/// A keyset window: the rows after `after` (in the list's order), at most `limit`.
/// List routes ask for one row more than a page to know whether another follows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Window<C> {
    /// The cursor of the last row already seen; `None` from the start.
    pub after: Option<C>,
    /// Rows to return at most.
    pub limit: i64,
}
