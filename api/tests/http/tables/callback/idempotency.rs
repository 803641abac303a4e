//! `idempotency_key`: the same key and body replay the first result, another body
//! is 409, a failed write frees its key, and 50 concurrent requests with one key
//! create one record.

use super::{intake_table, mint, names, write};
use crate::tables::fixture::Tables;
use serde_json::json;

#[tokio::test]
async fn a_key_replays_its_first_result() {
    let t = Tables::new().await;
    let (table, keys) = intake_table(&t).await;
    let (token, secret) = mint(&t, &table, "create,update").await;
    let body = json!({"op": "create", "data": {"name": "order 1"}, "idempotency_key": "order-1"});
    let (status, first) = write(&t, &token, &secret, body.clone()).await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["replayed"], false);
    let (status, again) = write(&t, &token, &secret, body).await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["replayed"], true);
    assert_eq!(again["record_id"], first["record_id"]);
    assert_eq!(again["status"], "created");
    // The same key with another body: 409, nothing written.
    let other = json!({"op": "create", "data": {"name": "order 2"}, "idempotency_key": "order-1"});
    let (status, refused) = write(&t, &token, &secret, other).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["detail"]["code"], "idempotency_conflict");
    assert_eq!(names(&t, &table).await, ["order 1"]);

    // A write that fails frees its key for the corrected request.
    let qty = keys["qty"].as_str().unwrap();
    let bad = json!({"op": "create", "data": {"qty": "lots"}, "idempotency_key": "order-3"});
    assert_eq!(write(&t, &token, &secret, bad).await.0, 400);
    let fixed =
        json!({"op": "create", "data": {"name": "order 3", qty: 3}, "idempotency_key": "order-3"});
    let (status, third) = write(&t, &token, &secret, fixed).await;
    assert_eq!(status, 200, "{third}");
    assert_eq!(third["replayed"], false);

    // Updates replay too; a key is per token.
    let record_id = first["record_id"].as_str().unwrap();
    let name = keys["name"].as_str().unwrap();
    let update = json!({"op": "update", "record_id": record_id, "data": {name: "order one"}, "idempotency_key": "u-1"});
    let (_, updated) = write(&t, &token, &secret, update.clone()).await;
    assert_eq!(updated["replayed"], false);
    let (_, replayed) = write(&t, &token, &secret, update).await;
    assert_eq!(
        (replayed["replayed"].clone(), replayed["status"].clone()),
        (json!(true), json!("updated"))
    );
    let (other_token, other_secret) = mint(&t, &table, "create").await;
    let reused = json!({"op": "create", "data": {"name": "order 4"}, "idempotency_key": "order-1"});
    let (status, own) = write(&t, &other_token, &other_secret, reused).await;
    assert_eq!((status, own["replayed"].clone()), (200, json!(false)));
    assert_eq!(names(&t, &table).await, ["order 3", "order 4", "order one"]);
}

#[tokio::test]
async fn fifty_concurrent_requests_with_one_key_create_one_record() {
    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let (token, secret) = mint(&t, &table, "create").await;
    let body = json!({"op": "create", "data": {"name": "once"}, "idempotency_key": "burst"});
    let requests = (0..50).map(|_| write(&t, &token, &secret, body.clone()));
    let answers = futures::future::join_all(requests).await;
    let first = &answers[0].1["record_id"];
    assert!(first.is_string(), "{:?}", answers[0]);
    for (status, answer) in &answers {
        assert_eq!(*status, 200, "{answer}");
        assert_eq!(&answer["record_id"], first);
        assert_eq!(answer["status"], "created");
    }
    let fresh = answers
        .iter()
        .filter(|(_, a)| a["replayed"] == false)
        .count();
    assert_eq!(fresh, 1, "exactly one request applied the write");
    assert_eq!(names(&t, &table).await, ["once"]);
}

#[tokio::test]
async fn a_receipt_whose_first_request_died_is_finished_by_the_next() {
    use cqrs_es::DomainEvent;
    use cqrs_es::persist::SerializedEvent;
    use domain::tables::callback_delivery::{CallbackOp, DeliveryEvent};
    use projections::store::LogRepository;

    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let (token, secret) = mint(&t, &table, "create").await;
    // The first request received the key and chose its record, then its server died
    // before writing: only the receipt is in the log.
    let body = json!({"op": "create", "data": {"name": "late"}, "idempotency_key": "k-1"});
    let hashed = json!({"op": "create", "data": {"name": "late"}, "record_id": null, "idempotency_key": "k-1"});
    let record_id = uuid::Uuid::new_v4();
    let company = t.seed.company("acme");
    let owner = format!("callback_token:{token}");
    let delivery = domain::ids::idempotent_target(company, "callback", &owner, "k-1");
    let received = DeliveryEvent::CallbackReceived {
        token_id: token.parse().unwrap(),
        key: "k-1".into(),
        request_hash: api::idempotency::request_hash(&hashed),
        op: CallbackOp::Create,
        record_id,
        received_at: chrono::Utc::now(),
    };
    let event = SerializedEvent::new(
        delivery.to_string(),
        1,
        "callback_delivery".into(),
        received.event_type(),
        received.event_version(),
        serde_json::to_value(&received).unwrap(),
        json!({"time": chrono::Utc::now(), "request_id": "died"}),
    );
    LogRepository::new(t.app.db.pool.clone())
        .append(&[event])
        .await
        .unwrap();
    // The retry waits for the first request, then finishes its write: the record the
    // receipt named, once.
    let (status, finished) = write(&t, &token, &secret, body.clone()).await;
    assert_eq!(status, 200, "{finished}");
    assert_eq!(finished["record_id"], record_id.to_string());
    assert_eq!(finished["replayed"], true);
    let (status, again) = write(&t, &token, &secret, body).await;
    assert_eq!(
        (status, again["record_id"].clone()),
        (200, json!(record_id.to_string()))
    );
    assert_eq!(names(&t, &table).await, ["late"]);
}
