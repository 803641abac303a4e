//! Cross-scope sharing, the channel floor of department tables and client access
//! (spec sections 2, 4 and 5).

use super::fixture::{BASE, Tables};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeSet;

fn labels(page: &Value) -> BTreeSet<String> {
    page["records"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {page}"))
        .iter()
        .map(|r| r["data"]["label"].as_str().unwrap().to_string())
        .collect()
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

pub(super) async fn rows(t: &Tables, table: &str, caller: &str) -> (u16, Value) {
    t.call(
        Method::GET,
        &format!("{table}/records?limit=100"),
        caller,
        None,
    )
    .await
}

/// A department table of rnd (managed by dm) with rows in three regions, governed
/// by a channel policy on `region`.
pub(super) async fn governed(t: &Tables) -> (String, Vec<String>) {
    let table = t.table("department:rnd", "dm", "leads").await;
    t.column(&table, json!({"name": "label", "type": "string"}))
        .await;
    t.column(&table, json!({"name": "region", "type": "string"}))
        .await;
    let mut ids = Vec::new();
    for (label, region) in [("n1", "north"), ("e1", "east"), ("s1", "south")] {
        let (status, body) = t
            .insert(&table, "dm", json!({"label": label, "region": region}))
            .await;
        assert_eq!(status, 201, "{body}");
        ids.push(body["id"].as_str().unwrap().to_string());
    }
    let (status, body) = t
        .call(
            Method::PATCH,
            &table,
            "dm",
            Some(json!({"channel_scope_column": "region"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["channel_scope_column"]
            .as_str()
            .unwrap()
            .starts_with("col_")
    );
    (table, ids)
}

fn room_grant(t: &Tables, table: &str, room: &str) -> String {
    let id = table.rsplit('/').next().unwrap();
    format!(
        "{BASE}/department/{}/tables/{id}/chatroom-permissions/{}",
        t.department("rnd"),
        t.seed.room("acme", room)
    )
}

#[tokio::test]
async fn a_caller_without_an_eligible_room_reads_nothing_and_writes_nothing() {
    let t = Tables::with_cast().await;
    let (table, ids) = governed(&t).await;
    let scp = json!({"error": "scp_scope_undeclared"});
    // member belongs to rnd but to no room holding a grant on the table.
    let (status, page) = rows(&t, &table, "member").await;
    assert_eq!((status, page["total"].clone()), (200, json!(0)), "{page}");
    let (status, _) = t
        .call(
            Method::GET,
            &format!("{table}/records/{}", ids[0]),
            "member",
            None,
        )
        .await;
    assert_eq!(status, 404, "a uniform 404");
    let got = t
        .insert(&table, "member", json!({"label": "x", "region": "north"}))
        .await;
    assert_eq!(got, (403, scp.clone()));
    for method in [Method::PUT, Method::DELETE] {
        let body = (method == Method::PUT).then(|| json!({"data": {"label": "y"}}));
        let got = t
            .call(
                method,
                &format!("{table}/records/{}", ids[0]),
                "member",
                body,
            )
            .await;
        assert_eq!(got, (403, scp.clone()));
    }
    let (_, me) = t
        .call(
            Method::GET,
            &format!("{table}/permissions/me"),
            "member",
            None,
        )
        .await;
    assert_eq!(
        (me["governed"].clone(), me["scope_values"].clone()),
        (json!(true), json!([]))
    );
    let (_, detail) = t.call(Method::GET, &table, "member", None).await;
    assert_eq!(
        detail["record_count"], 0,
        "governed without a room counts 0"
    );
    // The table manager is exempt.
    let (_, page) = rows(&t, &table, "dm").await;
    assert_eq!(labels(&page), set(&["n1", "e1", "s1"]));
    let (_, me) = t
        .call(Method::GET, &format!("{table}/permissions/me"), "dm", None)
        .await;
    assert_eq!(
        (me["source"].clone(), me["governed"].clone()),
        (json!("table_manager"), json!(false))
    );
}

#[tokio::test]
async fn rooms_reach_their_scope_values_and_fold() {
    let t = Tables::with_cast().await;
    let (table, _) = governed(&t).await;
    let lab = json!({"can_read": "all", "can_insert": true, "can_edit": "all", "scope_values": ["north", "east"]});
    let (status, body) = t
        .call(Method::PUT, &room_grant(&t, &table, "lab"), "dm", Some(lab))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["subject"]["kind"], "chatroom");
    let ops = json!({"can_read": "all", "scope_values": ["south"]});
    t.call(
        Method::PUT,
        &room_grant(&t, &table, "ops-room"),
        "dm",
        Some(ops),
    )
    .await;
    let cases = [
        ("member", vec!["n1", "e1"]),
        ("line1", vec!["n1", "e1"]),
        ("outsider", vec!["s1"]),
        ("roamer", vec!["n1", "e1", "s1"]),
    ];
    for (caller, expected) in cases {
        let (status, page) = rows(&t, &table, caller).await;
        assert_eq!(status, 200, "{caller}: {page}");
        assert_eq!(labels(&page), set(&expected), "{caller}");
        let (_, detail) = t.call(Method::GET, &table, caller, None).await;
        assert_eq!(
            detail["record_count"],
            expected.len(),
            "{caller} record_count"
        );
    }
    let got = t
        .insert(&table, "member", json!({"label": "x", "region": "south"}))
        .await;
    assert_eq!(
        got,
        (403, json!({"error": "scp_scope_undeclared"})),
        "outside the floor"
    );
    let got = t.insert(&table, "member", json!({"label": "x"})).await;
    assert_eq!(
        got,
        (403, json!({"error": "scp_scope_undeclared"})),
        "a new row needs a scope value"
    );
    let got = t
        .insert(&table, "member", json!({"label": "x", "region": "north"}))
        .await;
    assert_eq!(got.0, 201, "{}", got.1);
    let id = got.1["id"].as_str().unwrap();
    let got = t
        .call(
            Method::PUT,
            &format!("{table}/records/{id}"),
            "member",
            Some(json!({"data": {"region": "south"}})),
        )
        .await;
    assert_eq!(got.0, 403, "an edit may not leave the floor: {}", got.1);
    let got = t
        .insert(&table, "outsider", json!({"label": "y", "region": "south"}))
        .await;
    assert_eq!(got.0, 403, "the ops room grant does not insert: {}", got.1);
    // Removing the room's grant takes its members' access away again.
    let (status, _) = t
        .call(
            Method::DELETE,
            &room_grant(&t, &table, "ops-room"),
            "dm",
            None,
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = rows(&t, &table, "outsider").await;
    assert_eq!(status, 404, "outsider no longer reaches the table");
}

#[tokio::test]
async fn a_room_discovers_the_department_tables_shared_with_it() {
    let t = Tables::with_cast().await;
    let (table, _) = governed(&t).await;
    let table_id = table.rsplit('/').next().unwrap();
    let shared = format!("{}/tables/shared", t.mount("chatroom:ops-room"));
    let (status, list) = t.call(Method::GET, &shared, "outsider", None).await;
    assert_eq!((status, list["total"].clone()), (200, json!(0)), "{list}");
    t.call(
        Method::PUT,
        &room_grant(&t, &table, "ops-room"),
        "dm",
        Some(json!({"can_read": "all", "scope_values": ["south"]})),
    )
    .await;
    let (status, list) = t.call(Method::GET, &shared, "outsider", None).await;
    assert_eq!(status, 200, "{list}");
    assert_eq!(list["tables"][0]["id"], table_id);
    assert_eq!(
        list["tables"][0]["scope"]["kind"], "department",
        "sharing moves nothing"
    );
    assert_eq!(list["tables"][0]["record_count"], 1, "outsider's own count");
    let (status, _) = t.call(Method::GET, &shared, "member", None).await;
    assert_eq!(status, 404, "not a member of the ops room");
    // The table is still read through its owning scope only.
    let through_room = format!("{}/tables/{table_id}/records", t.mount("chatroom:ops-room"));
    let (status, _) = t.call(Method::GET, &through_room, "outsider", None).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_department_reaches_a_chatroom_table_through_its_grant() {
    let t = Tables::with_cast().await;
    let table = t.table("chatroom:lab", "member", "lab data").await;
    t.column(&table, json!({"name": "label", "type": "string"}))
        .await;
    t.insert(&table, "member", json!({"label": "lab row"}))
        .await;
    let (status, _) = rows(&t, &table, "outsider").await;
    assert_eq!(status, 404, "outsider is not in the lab");
    let id = table.rsplit('/').next().unwrap();
    let grant = format!(
        "{}/tables/{id}/department-permissions/{}",
        t.mount("chatroom:lab"),
        t.department("ops")
    );
    let body = json!({"can_read": "own", "can_insert": true, "can_edit": "own"});
    let (status, answer) = t
        .call(Method::PUT, &grant, "outsider", Some(body.clone()))
        .await;
    assert_eq!(status, 404, "only the table's managers grant: {answer}");
    let (status, answer) = t.call(Method::PUT, &grant, "member", Some(body)).await;
    assert_eq!(status, 200, "the creator manages the table: {answer}");
    let (status, answer) = t.call(Method::GET, &grant, "member", None).await;
    assert_eq!((status, answer["can_read"].clone()), (200, json!("own")));
    let got = t
        .insert(&table, "outsider", json!({"label": "ops row"}))
        .await;
    assert_eq!(got.0, 201, "{}", got.1);
    let (_, page) = rows(&t, &table, "outsider").await;
    assert_eq!(labels(&page), set(&["ops row"]), "own rows only");
    let (_, page) = rows(&t, &table, "member").await;
    assert_eq!(labels(&page), set(&["lab row", "ops row"]));
    let (status, _) = t.call(Method::DELETE, &grant, "member", None).await;
    assert_eq!(status, 200);
    let (status, _) = t.call(Method::GET, &grant, "member", None).await;
    assert_eq!(status, 404, "revoked");
    let (status, _) = rows(&t, &table, "outsider").await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn client_access_refuses_every_social_media_client() {
    let t = Tables::with_cast().await;
    let table = t.table("chatroom:lab", "member", "lab data").await;
    t.column(&table, json!({"name": "label", "type": "string"}))
        .await;
    t.insert(&table, "member", json!({"label": "one"})).await;
    let (status, _) = rows(&t, &table, "line1").await;
    assert_eq!(status, 200, "the client enters its room's tables");
    let access = format!("{table}/client-access");
    let (status, _) = t
        .call(
            Method::PATCH,
            &access,
            "line1",
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(status, 403, "clients do not manage tables");
    let (status, body) = t
        .call(
            Method::PATCH,
            &access,
            "member",
            Some(json!({"enabled": false})),
        )
        .await;
    assert_eq!(
        (status, body),
        (200, json!({"enabled": false, "passphrase_enabled": false}))
    );
    let (status, _) = rows(&t, &table, "line1").await;
    assert_eq!(status, 404, "a refused client sees nothing");
    let (status, list) = t
        .call(
            Method::GET,
            &format!("{}/tables", t.mount("chatroom:lab")),
            "line1",
            None,
        )
        .await;
    assert_eq!(
        (status, list["total"].clone()),
        (200, json!(0)),
        "nor lists it: {list}"
    );
    let (_, detail) = t.call(Method::GET, &table, "member", None).await;
    assert_eq!(detail["client_access"], false);
    let (status, _) = rows(&t, &table, "member").await;
    assert_eq!(status, 200, "users are unaffected");
}

#[tokio::test]
async fn acting_chatroom_id_is_silently_dropped() {
    let t = Tables::with_cast().await;
    let (table, _) = governed(&t).await;
    t.call(
        Method::PUT,
        &room_grant(&t, &table, "lab"),
        "dm",
        Some(json!({"can_read": "all", "scope_values": ["north"]})),
    )
    .await;
    let ops = t.seed.room("acme", "ops-room");
    let (status, plain) = rows(&t, &table, "roamer").await;
    assert_eq!(status, 200);
    let (status, acting) = t
        .call(
            Method::GET,
            &format!("{table}/records?limit=100&acting_chatroom_id={ops}"),
            "roamer",
            None,
        )
        .await;
    assert_eq!((status, labels(&acting)), (200, labels(&plain)));
    let (status, searched) = t
        .call(
            Method::POST,
            &format!("{table}/records/search?acting_chatroom_id={ops}"),
            "roamer",
            Some(json!({})),
        )
        .await;
    assert_eq!((status, labels(&searched)), (200, set(&["n1"])));
    let got = t
        .call(
            Method::POST,
            &format!("{table}/records?acting_chatroom_id={ops}"),
            "member",
            Some(json!({"data": {"label": "z", "region": "south"}})),
        )
        .await;
    assert_eq!(got.0, 403, "the floor still applies: {}", got.1);
}
