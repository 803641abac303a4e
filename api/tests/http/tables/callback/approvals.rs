//! Approval holds: review groups and templates (company managers), a table's
//! approval rules (moderators), callback writes held (`held_for_approval`,
//! `already_pending`, idempotent resends, the pending bucket), `pending_approval`
//! in search, and reviewers approving (the write applies) or rejecting.

use super::{intake_table, mint, write};
use crate::tables::fixture::{Tables, code};
use reqwest::Method;
use serde_json::{Value, json};

const REVIEW: &str = "/private/module/review";

async fn post(t: &Tables, user: &str, path: &str, body: Value) -> (u16, Value) {
    t.call(Method::POST, &format!("{REVIEW}{path}"), user, Some(body))
        .await
}

/// A group of `member` and a template with one gate it decides; (group, template).
async fn reviewers(t: &Tables, require_signature: bool) -> (String, String) {
    let member = t.user("member");
    let (status, group) = post(
        t,
        "boss",
        "/groups",
        json!({"name": "Finance", "member_ids": [member]}),
    )
    .await;
    assert_eq!(status, 201, "{group}");
    let group_id = group["id"].as_str().unwrap().to_string();
    let gates = json!([{"name": "Finance", "condition": {"type": "group", "group_id": group_id, "mode": "any"}}]);
    let body = json!({"name": "Payouts", "gates": gates, "require_signature": require_signature});
    let (status, template) = post(t, "boss", "/templates", body).await;
    assert_eq!(status, 201, "{template}");
    (group_id, template["id"].as_str().unwrap().to_string())
}

/// A reviewer's `approve` or `reject` of the process a callback answer names.
async fn decide(t: &Tables, user: &str, held: &Value, verb: &str, body: Value) -> (u16, Value) {
    let process = held["process_id"].as_str().unwrap();
    post(t, user, &format!("/processes/{process}/{verb}"), body).await
}

async fn set_rules(t: &Tables, table: &str, user: &str, rules: Value) -> (u16, Value) {
    t.call(
        Method::PUT,
        &format!("{table}/rules"),
        user,
        Some(json!({"rules": rules})),
    )
    .await
}

fn rule(template: &str, events: Value) -> Value {
    json!({"id": "payouts", "label": "Payouts need finance", "type": "require_approval",
           "events": events, "template_id": template})
}

#[tokio::test]
async fn review_groups_and_templates_are_company_managers_definitions() {
    let t = Tables::new().await;
    let member = t.user("member");
    let refused = post(
        &t,
        "member",
        "/groups",
        json!({"name": "F", "member_ids": [member]}),
    )
    .await;
    assert_eq!(refused.0, 403, "{}", refused.1);
    let stranger = t.seed.user("globex", "ceo");
    let refused = post(
        &t,
        "boss",
        "/groups",
        json!({"name": "F", "member_ids": [stranger]}),
    )
    .await;
    assert_eq!(refused.0, 400, "{}", refused.1);
    assert_eq!(code(&refused), "review_config_invalid");
    for bad in [
        json!({"name": "", "member_ids": [member]}),
        json!({"name": "F", "member_ids": []}),
        json!({"name": "F", "member_ids": [member, member]}),
    ] {
        let refused = post(&t, "boss", "/groups", bad.clone()).await;
        assert_eq!(
            code(&refused),
            "review_config_invalid",
            "{bad}: {}",
            refused.1
        );
    }
    assert_eq!(
        post(&t, "boss", "/groups", json!({"name": "F"})).await.0,
        422
    );
    let (group, template) = reviewers(&t, false).await;
    let unknown = json!([{"name": "X", "condition": {"type": "group", "group_id": uuid::Uuid::new_v4(), "mode": "any"}}]);
    let refused = post(
        &t,
        "boss",
        "/templates",
        json!({"name": "T", "gates": unknown}),
    )
    .await;
    assert_eq!(code(&refused), "review_config_invalid", "{}", refused.1);
    let all =
        json!([{"name": "X", "condition": {"type": "group", "group_id": group, "mode": "all"}}]);
    let refused = post(&t, "boss", "/templates", json!({"name": "T", "gates": all})).await;
    assert_eq!(code(&refused), "review_config_invalid", "{}", refused.1);
    let refused = post(&t, "boss", "/templates", json!({"name": "T", "gates": []})).await;
    assert_eq!(code(&refused), "review_config_invalid", "{}", refused.1);
    let (status, groups) = t
        .call(Method::GET, &format!("{REVIEW}/groups"), "boss", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(groups["groups"][0]["member_ids"], json!([member]));
    let (status, templates) = t
        .call(Method::GET, &format!("{REVIEW}/templates"), "boss", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(templates["templates"][0]["id"], template.as_str());
    assert_eq!(
        t.call(Method::GET, &format!("{REVIEW}/templates"), "dm", None)
            .await
            .0,
        403
    );
    let (_, other) = t
        .call(Method::GET, &format!("{REVIEW}/groups"), "ceo", None)
        .await;
    assert_eq!(other["groups"], json!([]), "another company sees none");

    // Rules: moderators, naming templates of the company.
    let (table, _) = intake_table(&t).await;
    let (status, saved) = set_rules(
        &t,
        &table,
        "dm",
        json!([rule(&template, json!(["updated", "created"]))]),
    )
    .await;
    assert_eq!(status, 200, "{saved}");
    assert_eq!(saved["rules"][0]["events"], json!(["created", "updated"]));
    let (status, read) = t
        .call(Method::GET, &format!("{table}/rules"), "dm", None)
        .await;
    assert_eq!((status, &read), (200, &saved));
    let refused = set_rules(
        &t,
        &table,
        "dm",
        json!([rule(&uuid::Uuid::new_v4().to_string(), json!(["created"]))]),
    )
    .await;
    assert_eq!(code(&refused), "rule_config_invalid", "{}", refused.1);
    let refused = set_rules(&t, &table, "dm", json!([rule(&template, json!([]))])).await;
    assert_eq!(code(&refused), "rule_config_invalid", "{}", refused.1);
    assert_eq!(set_rules(&t, &table, "member", json!([])).await.0, 403);
    let (_, read) = t
        .call(Method::GET, &format!("{table}/rules"), "dm", None)
        .await;
    assert_eq!(read, saved, "refusals changed nothing");
}

#[tokio::test]
async fn held_callback_writes_wait_for_reviewers() {
    let t = Tables::new().await;
    let (table, keys) = intake_table(&t).await;
    let (_, template) = reviewers(&t, true).await;
    let (token, secret) = mint(&t, &table, "create,update").await;
    let existing = t.record(&table, json!({"name": "old", "qty": 1})).await;
    let existing_id = existing["id"].as_str().unwrap().to_string();
    assert_eq!(
        set_rules(
            &t,
            &table,
            "dm",
            json!([rule(&template, json!(["created", "updated"]))])
        )
        .await
        .0,
        200
    );

    let (status, held) = write(
        &t,
        &token,
        &secret,
        json!({"op": "create", "data": {"name": "new", "qty": 9}}),
    )
    .await;
    assert_eq!(status, 200, "{held}");
    assert_eq!(held["status"], "held_for_approval");
    assert_eq!(held["record_id"], Value::Null);
    assert_eq!(held["rule_label"], "Payouts need finance");
    assert!(held["process_id"].is_string() && held["staged_change_id"].is_string());
    assert_eq!(
        t.records(&table, "dm").await["total"],
        1,
        "nothing written yet"
    );

    // A write a rule would hold is checked first: bad values are refused, not held
    // (the processes listed below are the three good holds only).
    for bad in [
        json!({"op": "create", "data": {"qty": "many"}}),
        json!({"op": "create", "data": {"nope": 1}}),
    ] {
        let (status, refused) = write(&t, &token, &secret, bad).await;
        assert_eq!(status, 400, "{refused}");
    }

    // A keyed resend answers the same hold; another body with the key is 409.
    let keyed = json!({"op": "create", "data": {"name": "keyed"}, "idempotency_key": "k-1"});
    let (_, first) = write(&t, &token, &secret, keyed.clone()).await;
    let (status, again) = write(&t, &token, &secret, keyed).await;
    assert_eq!(status, 200);
    assert_eq!(
        (again["replayed"].clone(), again["staged_change_id"].clone()),
        (json!(true), first["staged_change_id"].clone())
    );
    let other = json!({"op": "create", "data": {"name": "other"}, "idempotency_key": "k-1"});
    assert_eq!(write(&t, &token, &secret, other).await.0, 409);

    // An update is held; a second update of the record reuses its process.
    let qty = keys["qty"].as_str().unwrap();
    let update = json!({"op": "update", "record_id": existing_id, "data": {qty: 2}});
    let (_, updating) = write(&t, &token, &secret, update).await;
    assert_eq!(updating["status"], "held_for_approval", "{updating}");
    let update = json!({"op": "update", "record_id": existing_id, "data": {qty: 3}});
    let (status, pending) = write(&t, &token, &secret, update).await;
    assert_eq!(status, 200);
    assert_eq!(pending["status"], "already_pending");
    assert_eq!(pending["process_id"], updating["process_id"]);
    let bad = json!({"op": "update", "record_id": existing_id, "data": {qty: "many"}});
    assert_eq!(write(&t, &token, &secret, bad).await.0, 400);
    let (_, found) = t.search(&table, json!({"pending_approval": true})).await;
    assert_eq!(found["total"], 1, "{found}");
    assert_eq!(found["records"][0]["id"], existing_id.as_str());
    let (_, rest) = t.search(&table, json!({"pending_approval": false})).await;
    assert_eq!(rest["total"], 0, "{rest}");

    // Reviewers: members of the gate's group list and decide; others may not.
    let (status, listed) = t
        .call(Method::GET, &format!("{REVIEW}/processes"), "member", None)
        .await;
    assert_eq!(status, 200);
    assert_eq!(listed["processes"].as_array().unwrap().len(), 3, "{listed}");
    let (_, none) = t
        .call(Method::GET, &format!("{REVIEW}/processes"), "dm", None)
        .await;
    assert_eq!(none["processes"], json!([]));
    assert_eq!(
        decide(&t, "dm", &held, "approve", json!({"signature": "D"}))
            .await
            .0,
        403
    );
    assert_eq!(
        decide(&t, "ceo", &held, "approve", json!({"signature": "C"}))
            .await
            .0,
        404
    );
    let unsigned = decide(&t, "member", &held, "approve", json!({})).await;
    assert_eq!(
        code(&unsigned),
        "review_signature_required",
        "{}",
        unsigned.1
    );
    let (status, approved) = decide(
        &t,
        "member",
        &held,
        "approve",
        json!({"signature": "M. Ember"}),
    )
    .await;
    assert_eq!(status, 200, "{approved}");
    assert_eq!(approved["status"], "applied");
    assert_eq!(approved["gates"][0]["passed"], true);
    let created = approved["record_id"].as_str().unwrap();
    let (status, record) = t
        .call(
            Method::GET,
            &format!("{table}/records/{created}"),
            "dm",
            None,
        )
        .await;
    assert_eq!(status, 200, "{record}");
    assert_eq!(record["data"]["qty"], 9);
    let (status, _) = decide(
        &t,
        "member",
        &updating,
        "approve",
        json!({"signature": "M"}),
    )
    .await;
    assert_eq!(status, 200);
    let (_, record) = t
        .call(
            Method::GET,
            &format!("{table}/records/{existing_id}"),
            "dm",
            None,
        )
        .await;
    assert_eq!(record["data"]["qty"], 2, "the held update applied");
    let (status, rejected) = decide(
        &t,
        "member",
        &first,
        "reject",
        json!({"reason": "duplicate"}),
    )
    .await;
    assert_eq!(status, 200, "{rejected}");
    assert_eq!(
        (rejected["status"].as_str(), rejected["reason"].as_str()),
        (Some("rejected"), Some("duplicate"))
    );
    let decided = decide(&t, "member", &first, "approve", json!({"signature": "M"})).await;
    assert_eq!(decided.0, 409);
    assert_eq!(code(&decided), "staged_change_not_pending");
    assert_eq!(
        t.records(&table, "dm").await["total"],
        2,
        "the rejected write never applied"
    );
}

#[tokio::test]
async fn a_full_pending_bucket_answers_429() {
    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let (_, template) = reviewers(&t, false).await;
    let (token, secret) = mint(&t, &table, "create").await;
    assert_eq!(
        set_rules(
            &t,
            &table,
            "dm",
            json!([rule(&template, json!(["created"]))])
        )
        .await
        .0,
        200
    );
    for n in 0..50 {
        let (status, held) = write(
            &t,
            &token,
            &secret,
            json!({"op": "create", "data": {"name": format!("n{n}")}}),
        )
        .await;
        assert_eq!(held["status"], "held_for_approval", "{status} {held}");
    }
    let full = write(
        &t,
        &token,
        &secret,
        json!({"op": "create", "data": {"name": "one more"}}),
    )
    .await;
    assert_eq!(full.0, 429, "{}", full.1);
    assert_eq!(code(&full), "approval_pending_bucket_full");
    assert_eq!(full.1["detail"]["limit"], 50);
    assert_eq!(t.records(&table, "dm").await["total"], 0);
}

#[tokio::test]
async fn reviewers_deciding_at_once_take_turns() {
    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let mut gates = Vec::new();
    for (name, user) in [("Finance", "member"), ("Legal", "dm")] {
        let body = json!({"name": name, "member_ids": [t.user(user)]});
        let (status, group) = post(&t, "boss", "/groups", body).await;
        assert_eq!(status, 201, "{group}");
        gates.push(json!({"name": name, "condition": {"type": "group", "group_id": group["id"], "mode": "any"}}));
    }
    let (_, template) = post(
        &t,
        "boss",
        "/templates",
        json!({"name": "Two", "gates": gates}),
    )
    .await;
    let template = template["id"].as_str().unwrap();
    assert_eq!(
        set_rules(
            &t,
            &table,
            "dm",
            json!([rule(template, json!(["created"]))])
        )
        .await
        .0,
        200
    );
    let (token, secret) = mint(&t, &table, "create").await;
    let (_, held) = write(
        &t,
        &token,
        &secret,
        json!({"op": "create", "data": {"name": "both"}}),
    )
    .await;
    let approve = format!(
        "/processes/{}/approve",
        held["process_id"].as_str().unwrap()
    );
    let (first, second) = tokio::join!(
        post(&t, "member", &approve, json!({})),
        post(&t, "dm", &approve, json!({}))
    );
    assert_eq!((first.0, second.0), (200, 200), "{first:?} {second:?}");
    let statuses = [first.1["status"].clone(), second.1["status"].clone()];
    assert!(
        statuses.contains(&json!("applied")),
        "the later decision applies: {statuses:?}"
    );
    assert_eq!(t.records(&table, "dm").await["total"], 1, "applied once");
    let again = post(&t, "member", &approve, json!({})).await;
    assert_eq!(again.0, 409, "{}", again.1);
}

#[tokio::test]
async fn a_key_answers_as_it_first_did_when_rules_change() {
    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let (_, template) = reviewers(&t, false).await;
    let (token, secret) = mint(&t, &table, "create").await;
    let applied = json!({"op": "create", "data": {"name": "early"}, "idempotency_key": "early"});
    let (_, first) = write(&t, &token, &secret, applied.clone()).await;
    assert_eq!(first["status"], "created", "{first}");
    assert_eq!(
        set_rules(
            &t,
            &table,
            "dm",
            json!([rule(&template, json!(["created"]))])
        )
        .await
        .0,
        200
    );
    let (_, again) = write(&t, &token, &secret, applied).await;
    assert_eq!(
        (again["status"].clone(), again["replayed"].clone()),
        (json!("created"), json!(true)),
        "{again}"
    );
    let held = json!({"op": "create", "data": {"name": "late"}, "idempotency_key": "late"});
    let (_, first) = write(&t, &token, &secret, held.clone()).await;
    assert_eq!(first["status"], "held_for_approval", "{first}");
    assert_eq!(set_rules(&t, &table, "dm", json!([])).await.0, 200);
    let (_, again) = write(&t, &token, &secret, held).await;
    assert_eq!(again["status"], "held_for_approval", "{again}");
    assert_eq!(again["staged_change_id"], first["staged_change_id"]);
    assert_eq!(
        t.records(&table, "dm").await["total"],
        1,
        "each key wrote once at most"
    );
}
