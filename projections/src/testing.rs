//! Throwaway databases for tests: one cluster per test run (started by the README's
//! test command, which exports `TEST_DATABASE_URL`), one database per test. A test
//! that passes drops its database (a whole run would otherwise leave gigabytes on
//! the disk); a test that fails keeps it for a look.

use sqlx::PgPool;
use uuid::Uuid;

/// A freshly created and migrated database, dropped when it goes out of scope unless
/// the test is failing.
pub struct TestDatabase {
    /// Its connection URL.
    pub url: String,
    /// A pool on it.
    pub pool: PgPool,
    name: String,
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
        Self { url, pool, name }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        if std::thread::panicking() {
            eprintln!("kept the failing test's database {}", self.name);
            return;
        }
        // Drop runs inside the test's runtime, which cannot be blocked on; a thread
        // of its own with a runtime of its own drops the database (closing whatever
        // connections the test's server still holds).
        let name = self.name.clone();
        let dropped = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()?;
            runtime.block_on(async {
                let admin = crate::db::connect(&cluster_url(), 1).await?;
                sqlx::query(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                    .execute(&admin)
                    .await?;
                admin.close().await;
                anyhow::Ok(())
            })
        })
        .join();
        if let Ok(Err(error)) = dropped {
            eprintln!("dropping test database {}: {error:#}", self.name);
        }
    }
}
