//! Throwaway databases for tests: one cluster per test run (started by the README's
//! test command, which exports `TEST_DATABASE_URL`), one database per test.

use sqlx::PgPool;
use uuid::Uuid;

/// A freshly created and migrated database.
pub struct TestDatabase {
    /// Its connection URL.
    pub url: String,
    /// A pool on it.
    pub pool: PgPool,
}

/// The admin URL of the test cluster.
pub fn cluster_url() -> String {
    std::env::var("TEST_DATABASE_URL").expect(
        "TEST_DATABASE_URL is not set: run the test suite with ./scripts/test.sh, which starts a throwaway PostgreSQL cluster",
    )
}

/// Replaces the database name of a URL.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url.split_once('?').map_or((url, None), |(b, q)| (b, Some(q)));
    let scheme_end = base.find("://").map_or(0, |i| i + 3);
    let path_start = base[scheme_end..].find('/').map_or(base.len(), |i| scheme_end + i);
    let mut out = format!("{}/{}", &base[..path_start], database);
    if let Some(query) = query {
        out.push('?');
        out.push_str(query);
    }
    out
}

impl TestDatabase {
    /// Creates an empty, migrated database.
    pub async fn fresh() -> Self {
        let db = Self::empty().await;
        crate::db::migrate(&db.pool).await.expect("migrations apply to an empty database");
        db
    }

    /// Creates an empty database without running migrations.
    pub async fn empty() -> Self {
        let admin_url = cluster_url();
        let name = format!("test_{}", Uuid::new_v4().simple());
        let admin = crate::db::connect(&admin_url, 1).await.expect("test cluster reachable");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin)
            .await
            .expect("create test database");
        admin.close().await;
        let url = with_database(&admin_url, &name);
        let pool = crate::db::connect(&url, 20).await.expect("connect to the test database");
        Self { url, pool }
    }
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
        assert_eq!(with_database("postgres://u:p@h:5432/db", "t2"), "postgres://u:p@h:5432/t2");
    }
}
