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

impl TestDatabase {
    /// Creates an empty, migrated database.
    pub async fn fresh() -> Self {
        let db = Self::empty().await;
        crate::db::migrate(&db.pool)
            .await
            .expect("migrations apply to an empty database");
        db
    }

    /// Creates an empty database without running migrations.
    pub async fn empty() -> Self {
        let admin_url = cluster_url();
        let name = format!("test_{}", Uuid::new_v4().simple());
        let admin = crate::db::connect(&admin_url, 1)
            .await
            .expect("test cluster reachable");
        sqlx::query(&format!("CREATE DATABASE {name}"))
            .execute(&admin)
            .await
            .expect("create test database");
        admin.close().await;
        let url = crate::db::with_database(&admin_url, &name);
        let pool = crate::db::connect(&url, 20)
            .await
            .expect("connect to the test database");
        Self { url, pool }
    }
}
