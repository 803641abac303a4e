//! What `db::connect` sets on every session of the service.

use projections::testing::TestDatabase;

#[tokio::test]
async fn sessions_run_without_jit_compilation() {
    let db = TestDatabase::empty().await;
    let jit: String = sqlx::query_scalar("SHOW jit")
        .fetch_one(&db.pool)
        .await
        .expect("SHOW jit");
    assert_eq!(jit, "off");
}
