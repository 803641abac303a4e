//! Minting, listing and revoking callback tokens; the form schema.

use super::{column, intake_table, mint, signed, tokens_path, write};
use crate::tables::fixture::Tables;
use reqwest::Method;
use serde_json::json;

#[tokio::test]
async fn moderators_mint_list_and_revoke_callback_tokens() {
    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let path = tokens_path(&table);
    // The spec's mount names the room: `/chatroom/{chatroom_id}/tables/{id}/...`.
    assert!(path.contains(&t.seed.room("acme", "lab").to_string()));
    let body = json!({"name": "crm", "allowed_ops": "create,update"});
    for who in ["member", "outsider"] {
        let (status, refused) = t.call(Method::POST, &path, who, Some(body.clone())).await;
        assert!(status == 403 || status == 404, "{who}: {status} {refused}");
        let (status, _) = t.call(Method::GET, &path, who, None).await;
        assert!(status == 403 || status == 404, "{who} lists");
    }
    // There is no update-only token, and a token has a name.
    for bad in [
        json!({"name": "x", "allowed_ops": "update"}),
        json!({"name": "", "allowed_ops": "create"}),
        json!({"allowed_ops": "create"}),
        json!({"name": "x", "valid_until": "2001-01-01T00:00:00Z"}),
    ] {
        let (status, refused) = t.call(Method::POST, &path, "dm", Some(bad.clone())).await;
        assert_eq!(status, 422, "{bad}: {refused}");
    }
    let (status, minted) = t.call(Method::POST, &path, "dm", Some(body)).await;
    assert_eq!(status, 201, "{minted}");
    let token = minted["token_id"].as_str().unwrap().to_string();
    let secret = minted["secret"].as_str().unwrap().to_string();
    assert!(secret.len() >= 43, "256 random bits");
    assert_eq!(minted["allowed_ops"], "create,update");
    assert_eq!(minted["table_id"], table.rsplit('/').next().unwrap());
    assert_eq!(
        minted["url_path"],
        format!("/public/module/custom_tables/callback/{token}")
    );
    let (status, second) = t
        .call(Method::POST, &path, "dm", Some(json!({"name": "second"})))
        .await;
    assert_eq!(status, 201);
    assert_eq!(second["allowed_ops"], "create", "the default");

    // Listed newest first, never with a secret.
    let (status, list) = t.call(Method::GET, &path, "dm", None).await;
    assert_eq!(status, 200, "{list}");
    let tokens = list["tokens"].as_array().unwrap();
    assert_eq!(tokens.len(), 2);
    assert_eq!(tokens[0]["name"], "second");
    assert_eq!(tokens[1]["id"], token.as_str());
    assert_eq!(tokens[1]["created_by"], format!("user:{}", t.user("dm")));
    assert!(!list.to_string().contains(&secret));
    assert!(tokens.iter().all(|t| t.get("secret").is_none()));

    // Revoked: listed as such, and writes answer the uniform 404.
    let ok = write(
        &t,
        &token,
        &secret,
        json!({"op": "create", "data": {"name": "a"}}),
    )
    .await;
    assert_eq!(ok.0, 200, "{}", ok.1);
    let revoke = format!("{path}/{token}");
    assert!(matches!(
        t.call(Method::DELETE, &revoke, "member", None).await.0,
        403 | 404
    ));
    let (status, _) = t.call(Method::DELETE, &revoke, "dm", None).await;
    assert_eq!(status, 200);
    let (_, list) = t.call(Method::GET, &path, "dm", None).await;
    assert_eq!(list["tokens"][1]["revoked"], true);
    let gone = write(
        &t,
        &token,
        &secret,
        json!({"op": "create", "data": {"name": "b"}}),
    )
    .await;
    assert_eq!(gone, (404, json!({"detail": "Not found"})));
    // A token of another table is not under this one.
    let (other, _) = intake_table(&t).await;
    let elsewhere = format!("{}/{token}", tokens_path(&other));
    let refused = t.call(Method::DELETE, &elsewhere, "dm", None).await;
    assert_eq!(refused, (404, json!({"detail": "Token not found"})));
}

#[tokio::test]
async fn the_form_schema_lists_writable_columns_and_is_never_throttled() {
    let t = Tables::new().await;
    let (table, _) = intake_table(&t).await;
    let target = t.table("chatroom:lab", "dm", "target").await;
    let target_id = target.rsplit('/').next().unwrap();
    let link = json!({"name": "to", "type": "link", "target_table_id": target_id});
    column(&t, &table, link).await;
    column(&t, &table, json!({"name": "extra", "type": "json"})).await;
    let (token, secret) = mint(&t, &table, "create").await;
    let schema = format!("{token}/form-schema");
    let bearer = [("authorization", format!("Bearer {secret}"))];
    let (status, _, text) = super::send(&t, Method::GET, &schema, &bearer, None).await;
    assert_eq!(status, 200, "{text}");
    let got: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        got,
        json!({"table_name": "intake", "columns": [
            {"name": "name", "type": "string"}, {"name": "qty", "type": "integer"},
            {"name": "notes", "type": "text"}, {"name": "to", "type": "link"},
            {"name": "extra", "type": "json"}]})
    );
    // Signed over `<timestamp>.` (the empty body) by an independent client.
    let (status, by_signature) = signed(&t, "GET", &schema, &secret, "", 0).await;
    assert_eq!(status, 200, "{by_signature}");
    assert_eq!(by_signature, got);
    let (status, _) = signed(&t, "GET", &schema, &secret, "", -301).await;
    assert_eq!(status, 404, "a stale timestamp");
    // Exhaust the token's minute window: the form schema still answers.
    for _ in 0..60 {
        write(&t, &token, &secret, json!({"op": "nothing"})).await;
    }
    let (status, _) = write(&t, &token, &secret, json!({"op": "create", "data": {}})).await;
    assert_eq!(status, 429);
    let (status, _, _) = super::send(&t, Method::GET, &schema, &bearer, None).await;
    assert_eq!(status, 200);
}
