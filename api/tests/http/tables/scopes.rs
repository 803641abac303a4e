//! Scope mounts and gates (spec sections 2 and 5).

use super::fixture::{BASE, Tables};
use crate::support::As;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn each_mount_creates_and_lists_its_own_tables() {
    let t = Tables::new().await;
    for (scope, user) in [
        ("company", "member"),
        ("department:rnd", "member"),
        ("chatroom:lab", "member"),
    ] {
        let table = t.table(scope, user, &format!("t {scope}")).await;
        let (status, body) = t
            .call(
                Method::GET,
                &format!("{}/tables", t.mount(scope)),
                user,
                None,
            )
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["total"], 1, "{scope}: {body}");
        assert!(table.ends_with(body["tables"][0]["id"].as_str().unwrap()));
        assert_eq!(
            body["tables"][0]["scope"]["kind"],
            scope.split(':').next().unwrap()
        );
    }
}

#[tokio::test]
async fn a_table_is_reached_only_through_its_owning_scope() {
    let t = Tables::new().await;
    let table = t.table("department:rnd", "dm", "rnd data").await;
    let id = table.rsplit('/').next().unwrap();
    for mount in [
        t.mount("company"),
        t.mount("department:ops"),
        t.mount("chatroom:lab"),
    ] {
        let (status, _) = t
            .call(Method::GET, &format!("{mount}/tables/{id}"), "boss", None)
            .await;
        assert_eq!(status, 404, "{mount}");
    }
    let (status, _) = t.call(Method::GET, &table, "boss", None).await;
    assert_eq!(status, 200);
    let key = t
        .column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    for mount in [t.mount("company"), t.mount("department:ops")] {
        let column = format!("{mount}/tables/{id}/columns/{key}");
        for (method, body) in [
            (Method::PATCH, Some(json!({"name": "m"}))),
            (Method::DELETE, None),
        ] {
            let (status, _) = t.call(method.clone(), &column, "boss", body).await;
            assert_eq!(status, 404, "{method} {column}");
        }
        let (status, _) = t
            .call(
                Method::GET,
                &format!("{mount}/tables/{id}/columns"),
                "boss",
                None,
            )
            .await;
        assert_eq!(status, 404, "columns of {mount}");
    }
}

#[tokio::test]
async fn invisible_scopes_answer_404() {
    let t = Tables::new().await;
    let rnd = t.table("department:rnd", "dm", "rnd").await;
    let lab = t.table("chatroom:lab", "member", "lab").await;
    for path in [&rnd, &lab] {
        let (status, body) = t.call(Method::GET, path, "outsider", None).await;
        assert_eq!(status, 404, "{path}: {body}");
        assert_eq!(body["detail"], "Custom table not found");
    }
    let (status, _) = t
        .call(
            Method::GET,
            &format!("{}/tables", t.mount("department:rnd")),
            "outsider",
            None,
        )
        .await;
    assert_eq!(status, 404);
    let company = t.table("company", "boss", "company").await;
    let (status, _) = t.call(Method::GET, &company, "ceo", None).await;
    assert_eq!(status, 404, "another company's table is invisible");
    let (status, _) = t
        .call(
            Method::GET,
            &format!("{BASE}/chatroom/{}/tables", uuid::Uuid::new_v4()),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 404, "unknown room");
}

#[tokio::test]
async fn company_managers_enter_rooms_they_have_not_joined() {
    let t = Tables::new().await;
    let lab = t.table("chatroom:lab", "member", "lab").await;
    let (status, _) = t.call(Method::GET, &lab, "boss", None).await;
    assert_eq!(status, 200, "chatroom access");
    // ...but listing a chatroom table's columns needs a joined member (spec section 5).
    let (status, body) = t
        .call(Method::GET, &format!("{lab}/columns"), "boss", None)
        .await;
    assert_eq!(status, 403, "{body}");
    let (status, _) = t
        .call(Method::GET, &format!("{lab}/columns"), "member", None)
        .await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn column_creation_thresholds_differ_per_scope() {
    let t = Tables::new().await;
    let column = json!({"name": "n", "type": "integer"});
    let company = t.table("company", "boss", "c").await;
    let got = t.add_column(&company, "member", column.clone()).await;
    assert_eq!(got.0, 403, "company: moderator required: {}", got.1);
    assert_eq!(got.1["detail"], "Insufficient permissions.");
    let dept = t.table("department:rnd", "dm", "d").await;
    let got = t.add_column(&dept, "member", column.clone()).await;
    assert_eq!(got.0, 200, "department: table access suffices: {}", got.1);
    let key = got.1["column"]["id"].as_str().unwrap();
    let got = t
        .call(
            Method::PATCH,
            &format!("{dept}/columns/{key}"),
            "member",
            Some(json!({"name": "m"})),
        )
        .await;
    assert_eq!(got.0, 403, "updating needs a moderator everywhere");
    let got = t
        .call(
            Method::PATCH,
            &format!("{dept}/columns/{key}"),
            "dm",
            Some(json!({"name": "m"})),
        )
        .await;
    assert_eq!(got.0, 200, "the department manager moderates: {}", got.1);
    let got = t
        .call(
            Method::DELETE,
            &format!("{dept}/columns/{key}"),
            "member",
            None,
        )
        .await;
    assert_eq!(got.0, 403, "deleting needs a moderator: {}", got.1);
    let company_key = t
        .column(&company, json!({"name": "c", "type": "integer"}))
        .await;
    let got = t
        .call(
            Method::PUT,
            &format!("{company}/columns/{company_key}"),
            "member",
            Some(json!({"name": "renamed"})),
        )
        .await;
    assert_eq!(
        got.0, 403,
        "the legacy PUT needs a moderator too: {}",
        got.1
    );
    let got = t
        .call(
            Method::DELETE,
            &format!("{company}/columns/{company_key}"),
            "member",
            None,
        )
        .await;
    assert_eq!(got.0, 403, "{}", got.1);
    let room = t.table("chatroom:lab", "member", "r").await;
    let got = t.add_column(&room, "member", column.clone()).await;
    assert_eq!(got.0, 200, "the creator moderates: {}", got.1);
    let other = t.table("chatroom:lab", "dm", "r2").await;
    let got = t.add_column(&other, "member", column).await;
    assert_eq!(got.0, 403, "a plain room member does not");
}

#[tokio::test]
async fn restricted_keys_and_missing_credentials_are_refused() {
    let t = Tables::new().await;
    let lab = t.table("chatroom:lab", "member", "lab").await;
    for path in [
        format!("{}/tables", t.mount("chatroom:lab")),
        lab.clone(),
        format!("{lab}/records"),
    ] {
        let response = t
            .app
            .request(Method::GET, &path)
            .api_key(&t.seed.key("acme", "bot"))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status().as_u16(), 403, "{path}");
        let response = t.app.request(Method::GET, &path).send().await.unwrap();
        assert_eq!(response.status().as_u16(), 418, "{path}");
    }
    let response = t
        .app
        .request(Method::GET, &lab)
        .api_key(&t.seed.key("acme", "full"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        response.status().as_u16(),
        200,
        "a full key acts as its owner"
    );
}

#[tokio::test]
async fn the_openapi_document_shapes_every_mount() {
    let t = Tables::new().await;
    let doc: serde_json::Value = t
        .app
        .request(Method::GET, "/openapi.json")
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    for path in [
        "/private/module/custom_tables/company/tables",
        "/private/module/custom_tables/chatroom/{chatroom_id}/tables/{table_id}/records/search",
        "/private/module/custom_tables/department/{department_id}/tables/{table_id}/columns/preview",
        "/private/module/custom_tables/company/tables/{table_id}/records/export",
        "/private/module/custom_tables/chatroom/migrations/{migration_id}/status",
        "/private/module/custom_tables/company/tables/{table_id}/views/{view_id}",
    ] {
        assert!(doc["paths"].get(path).is_some(), "{path} missing");
    }
    let put = &doc["paths"]["/private/module/custom_tables/company/tables/{table_id}/columns/{column_id}"];
    assert!(put.get("put").is_some() && put.get("patch").is_some());
    let dept = &doc["paths"]["/private/module/custom_tables/department/{department_id}/tables/{table_id}/columns/{column_id}"];
    assert!(
        dept.get("put").is_none(),
        "the deprecated PUT is company-only"
    );
}
