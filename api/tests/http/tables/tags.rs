//! Table tags over HTTP (`{scope_mount}/table-tags`, spec `custom-tables.md`
//! section 2): the scope's managers create them, a table's moderators put them on
//! and take them off, whoever lists the scope's tables lists them, and a Command's
//! `tag_id` must name a tag of its table's scope.

use super::fixture::{Tables, code};
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn table_tags_label_a_scope_s_tables() {
    let t = Tables::new().await;
    let company = t.mount("company");
    let table = t.table("company", "boss", "Ledger").await;
    let table_id = table.rsplit('/').next().unwrap().to_string();
    let tags = format!("{company}/table-tags");
    let body = json!({"name": "Finance", "description": "money", "color": "#2266AA"});
    let (s, tag) = t
        .call(Method::POST, &tags, "boss", Some(body.clone()))
        .await;
    assert_eq!(s, 201, "{tag}");
    assert_eq!(tag["color"], "#2266aa");
    assert_eq!(tag["system"], serde_json::Value::Null);
    assert_eq!(tag["table_ids"], json!([]));
    let tag_id = tag["id"].as_str().unwrap().to_string();

    let again = t
        .call(
            Method::POST,
            &tags,
            "boss",
            Some(json!({"name": " finance "})),
        )
        .await;
    assert_eq!((again.0, code(&again)), (409, "already_exists"));
    let bad = t
        .call(
            Method::POST,
            &tags,
            "boss",
            Some(json!({"name": "x", "color": "blue"})),
        )
        .await;
    assert_eq!((bad.0, code(&bad)), (400, "table_config_invalid"));
    let (s, _) = t
        .call(
            Method::POST,
            &tags,
            "boss",
            Some(json!({"name": "x", "colour": "#000000"})),
        )
        .await;
    assert_eq!(s, 422, "unknown fields are refused");
    let (s, _) = t
        .call(Method::POST, &tags, "member", Some(body.clone()))
        .await;
    assert_eq!(s, 403, "a company user who manages nothing creates no tag");
    let rnd_tags = format!("{}/table-tags", t.mount("department:rnd"));
    let (s, _) = t
        .call(Method::POST, &rnd_tags, "outsider", Some(body.clone()))
        .await;
    assert_eq!(s, 404);
    let (s, _) = t
        .call(Method::POST, &rnd_tags, "dm", Some(body.clone()))
        .await;
    assert_eq!(s, 201, "the department's manager tags its tables");

    let on = format!("{tags}/{tag_id}/tables/{table_id}");
    let (s, _) = t.call(Method::POST, &on, "member", None).await;
    assert_eq!(s, 403, "only the table's moderators tag it");
    let (s, tagged) = t.call(Method::POST, &on, "boss", None).await;
    assert_eq!(s, 200, "{tagged}");
    assert_eq!(tagged["table_ids"], json!([table_id]));
    let (s, twice) = t.call(Method::POST, &on, "boss", None).await;
    assert_eq!((s, &twice["table_ids"]), (200, &json!([table_id])));
    let other = t.table("department:rnd", "dm", "Lab book").await;
    let other_id = other.rsplit('/').next().unwrap();
    let (s, _) = t
        .call(
            Method::POST,
            &format!("{tags}/{tag_id}/tables/{other_id}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(s, 404, "a table of another scope");
    let (s, _) = t
        .call(
            Method::POST,
            &format!("{rnd_tags}/{tag_id}/tables/{other_id}"),
            "boss",
            None,
        )
        .await;
    assert_eq!(s, 404, "a tag of another scope");
    let (s, _) = t
        .call(
            Method::POST,
            &format!("{tags}/{}/tables/{table_id}", uuid::Uuid::new_v4()),
            "boss",
            None,
        )
        .await;
    assert_eq!(s, 404);
    let ceo = t.table_as_ceo().await;
    let (s, _) = t
        .call(
            Method::POST,
            &format!("{tags}/{tag_id}/tables/{}", ceo.rsplit('/').next().unwrap()),
            "boss",
            None,
        )
        .await;
    assert_eq!(s, 404, "another company's table");

    let (s, listed) = t.call(Method::GET, &tags, "member", None).await;
    assert_eq!(s, 200);
    assert_eq!(listed["total"], 1);
    assert_eq!(listed["tags"][0]["table_ids"], json!([table_id]));
    let (s, theirs) = t.call(Method::GET, &tags, "ceo", None).await;
    assert_eq!(
        (s, &theirs["total"]),
        (200, &json!(0)),
        "the company mount is the caller's own company"
    );
    let (s, _) = t.call(Method::GET, &rnd_tags, "ceo", None).await;
    assert_eq!(s, 404, "another company sees nothing");

    // A Command names a tag of its table's scope.
    let command = |tag: &str| {
        json!({"table_id": table_id, "name": "tagged", "kind": "query", "tag_id": tag,
        "inputs": {"type": "object", "properties": {}}, "query": {}})
    };
    let commands = format!("{company}/commands");
    let (s, body) = t
        .call(
            Method::POST,
            &commands,
            "boss",
            Some(command(&uuid::Uuid::new_v4().to_string())),
        )
        .await;
    assert_eq!(s, 422, "{body}");
    assert_eq!(body["detail"][0]["loc"], json!(["body", "tag_id"]));
    let (s, body) = t
        .call(Method::POST, &commands, "boss", Some(command(&tag_id)))
        .await;
    assert_eq!(s, 201, "{body}");

    let (s, off) = t.call(Method::DELETE, &on, "boss", None).await;
    assert_eq!((s, &off["table_ids"]), (200, &json!([])));
}
