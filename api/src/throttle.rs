//! Fixed request windows per key: the public read surface's per-token `rpm` and
//! the callback rate (one minute), the client-access passphrase attempts (300
//! seconds; spec `custom-tables.md` section 8).
//!
//! Counts live in this process: each API node enforces a token's `rpm` on its own
//! share of the traffic. A window also tells the read path when a token's
//! `last_used_at` is worth writing (once per window).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};
use uuid::Uuid;

/// The default window length.
pub const WINDOW: Duration = Duration::from_secs(60);

/// The window of the client-access passphrase attempts and of name resolutions
/// (spec `custom-tables.md` section 8: "per 300 seconds").
pub const FIVE_MINUTES: Duration = Duration::from_secs(300);

/// What one request may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Admission {
    /// Allowed; `first` when it opened a new window.
    Allowed {
        /// Whether this request opened the window.
        first: bool,
    },
    /// Over the limit until the window ends, in whole seconds (at least 1).
    Limited {
        /// Seconds until the next window.
        retry_after: u64,
    },
}

/// Fixed windows keyed by token (one minute unless made [`Throttle::with_window`]).
#[derive(Debug)]
pub struct Throttle {
    window: Duration,
    windows: Mutex<HashMap<Uuid, (Instant, i64)>>,
}

impl Default for Throttle {
    fn default() -> Self {
        Self::with_window(WINDOW)
    }
}

impl Throttle {
    /// Windows of this length.
    pub fn with_window(window: Duration) -> Self {
        Self {
            window,
            windows: Mutex::new(HashMap::new()),
        }
    }

    /// Counts one request of `token` against `limit` per window at `now`.
    pub fn admit(&self, token: Uuid, limit: i64, now: Instant) -> Admission {
        let window_length = self.window;
        let mut windows = self.windows.lock().unwrap_or_else(|e| e.into_inner());
        if windows.len() > 100_000 {
            windows.retain(|_, (start, _)| now.duration_since(*start) < window_length);
        }
        let window = windows.entry(token).or_insert((now, 0));
        let mut first = false;
        if now.duration_since(window.0) >= window_length {
            *window = (now, 0);
        }
        if window.1 == 0 {
            first = true;
        }
        if window.1 >= limit {
            let left = window_length.saturating_sub(now.duration_since(window.0));
            return Admission::Limited {
                retry_after: left.as_secs().max(1),
            };
        }
        window.1 += 1;
        Admission::Allowed { first }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_window_admits_its_limit_then_refuses_until_it_ends() {
        let throttle = Throttle::default();
        let token = Uuid::from_u128(1);
        let start = Instant::now();
        assert_eq!(
            throttle.admit(token, 2, start),
            Admission::Allowed { first: true }
        );
        assert_eq!(
            throttle.admit(token, 2, start),
            Admission::Allowed { first: false }
        );
        let later = start + Duration::from_secs(20);
        assert_eq!(
            throttle.admit(token, 2, later),
            Admission::Limited { retry_after: 40 }
        );
        assert_eq!(
            throttle.admit(Uuid::from_u128(2), 2, later),
            Admission::Allowed { first: true }
        );
        assert_eq!(
            throttle.admit(token, 2, start + WINDOW),
            Admission::Allowed { first: true }
        );
    }
}
