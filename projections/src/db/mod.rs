//! Connecting to PostgreSQL and migrating it.

pub mod embedded;

use anyhow::Context;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgPool};
use std::str::FromStr;
use std::time::Duration;

/// Every migration in `migrations/`, embedded at compile time.
pub static MIGRATOR: Migrator = sqlx::migrate!("../migrations");

/// How long a pooled connection may sit idle before it is tested again when taken.
const TRUSTED_IDLE: Duration = Duration::from_secs(5);

/// Opens a pool, failing with a readable message when the database is unreachable
/// (postgres-es's own helper panics instead).
///
/// sqlx tests every connection with a round trip both when it is returned (always)
/// and when it is taken (by default): one statement on the pool costs three round
/// trips. A connection returned a moment ago has just passed that test, so only
/// one idle for longer than [`TRUSTED_IDLE`] is tested again when taken.
pub async fn connect(url: &str, max_connections: u32) -> anyhow::Result<PgPool> {
    let options = PgConnectOptions::from_str(url)
        .with_context(|| "DATABASE_URL is not a valid PostgreSQL connection URL".to_string())?;
    PgPoolOptions::new()
        .max_connections(max_connections)
        .acquire_timeout(Duration::from_secs(10))
        .test_before_acquire(false)
        .before_acquire(|connection, metadata| {
            Box::pin(async move {
                if metadata.idle_for > TRUSTED_IDLE {
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
    use super::with_database;

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
