//! Connecting to PostgreSQL and migrating it.

pub mod embedded;

use anyhow::Context;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool};
use std::str::FromStr;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Every migration in `migrations/`, embedded at compile time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// How long a pooled connection may sit idle before it is tested again when taken.
const TRUSTED_IDLE: Duration = Duration::from_secs(5);

/// When this process last saw the server drop a connection, in nanoseconds since
/// [`clock`]'s origin (0: never).
static LOST_AT: AtomicU64 = AtomicU64::new(0);

/// Time since the first call, the clock of [`LOST_AT`].
fn clock() -> Duration {
    static ORIGIN: OnceLock<Instant> = OnceLock::new();
    ORIGIN.get_or_init(Instant::now).elapsed()
}

/// Records that the server dropped a connection: every connection returned to a
/// pool before now is tested when next taken, however recently it was returned.
/// The pump's signal listener calls it when its own connection is lost or cannot
/// be opened (a restart ends every session, the listener's first, since it is the
/// one always reading); a session ended alone, or a network that drops packets
/// without a reset, is not seen here.
pub fn connection_lost() {
    let now = u64::try_from(clock().as_nanos()).unwrap_or(u64::MAX);
    LOST_AT.fetch_max(now.max(1), Ordering::SeqCst);
}

/// How late a connection's return may be computed (sqlx measures `idle_for`
/// before the acquire hook reads the clock): one returned this little after a
/// loss is tested too.
const RETURN_SLACK: Duration = Duration::from_millis(100);

/// Whether a connection idle for `idle_for` is tested before it is handed out:
/// when it has been idle past [`TRUSTED_IDLE`], or when it was returned (and passed
/// its test on return) no later than the last connection loss (give or take
/// [`RETURN_SLACK`]).
fn must_test(idle_for: Duration, now: Duration, lost_at: Option<Duration>) -> bool {
    idle_for > TRUSTED_IDLE
        || lost_at.is_some_and(|lost| now.saturating_sub(idle_for) <= lost + RETURN_SLACK)
}

/// Opens a pool, failing with a readable message when the database is unreachable
/// (postgres-es's own helper panics instead).
///
/// sqlx tests every connection with a round trip both when it is returned (always)
/// and when it is taken (by default): one statement on the pool costs three round
/// trips. A connection returned a moment ago has just passed that test, so only
/// one idle for longer than [`TRUSTED_IDLE`], or returned before the server last
/// dropped a connection ([`connection_lost`]), is tested again when taken.
///
/// JIT compilation is off for the service's sessions: PostgreSQL compiles a query
/// whose estimated cost passes `jit_above_cost`, whatever it then reads, and the
/// service's reads are short. The contents janitor's read of a company's expired
/// runs estimated high and read nothing: 0.1 ms to run, 146 ms to compile.
pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    let options = PgConnectOptions::from_str(url)
        .with_context(|| "DATABASE_URL is not a valid PostgreSQL connection URL".to_string())?
        .options([("jit", "off")]);
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .before_acquire(|connection, metadata| {
            Box::pin(async move {
                let lost_at = match LOST_AT.load(Ordering::SeqCst) {
                    0 => None,
                    nanos => Some(Duration::from_nanos(nanos)),
                };
                if must_test(metadata.idle_for, clock(), lost_at) {
                    connection.ping().await?;
                }
                Ok(true)
            })
        })
        .connect_with(options)
        .await
        .with_context(|| format!("cannot connect to the database at {}", redact(url)))
}

/// Applies every pending migration, then moves the hash chain to its current
/// epoch ([`crate::chain_epoch`]).
pub async fn migrate(pool: &PgPool) -> anyhow::Result<()> {
    MIGRATOR
        .run(pool)
        .await
        .context("database migration failed")?;
    crate::chain_epoch::upgrade(pool)
        .await
        .context("moving the hash chain to its current epoch failed")?;
    Ok(())
}

/// The URL without its password, for messages.
pub fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            let userinfo = &url[scheme + 3..at];
            let user = userinfo.split(':').next().unwrap_or("");
            format!("{}{}@{}", &url[..scheme + 3], user, &url[at + 1..])
        }
        _ => url.to_string(),
    }
}

/// The same URL with another database name (used for scratch and test databases).
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[scheme_end..]
        .find('/')
        .map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{}", &base[..path_start], database);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{TRUSTED_IDLE, must_test, with_database};
    use std::time::Duration;

    #[test]
    fn a_connection_is_trusted_only_when_returned_recently_and_after_the_last_loss() {
        let s = Duration::from_secs;
        // Never lost: tested only past the idle bound.
        assert!(!must_test(s(1), s(100), None));
        assert!(must_test(TRUSTED_IDLE + s(1), s(100), None));
        // Returned at 99 s, a loss seen at 99.5 s: tested.
        assert!(must_test(s(1), s(100), Some(Duration::from_millis(99_500))));
        // Returned at 99 s, after a loss seen at 98 s: its return test was later.
        assert!(!must_test(s(1), s(100), Some(s(98))));
        // Returned within the slack after the loss: tested all the same.
        assert!(must_test(s(1), s(100), Some(Duration::from_millis(98_950))));
    }

    #[test]
    fn database_name_is_replaced() {
        assert_eq!(
            with_database("postgres://postgres@localhost/postgres?host=/tmp/x", "t1"),
            "postgres://postgres@localhost/t1?host=/tmp/x"
        );
        assert_eq!(
            with_database("postgres://u:p@h:5432/db", "t2"),
            "postgres://u:p@h:5432/t2"
        );
    }

    #[test]
    fn redact_hides_the_password() {
        assert_eq!(
            super::redact("postgres://u:secret@h/db"),
            "postgres://u@h/db"
        );
        assert_eq!(
            super::redact("postgres:///db?host=/tmp"),
            "postgres:///db?host=/tmp"
        );
    }
}
