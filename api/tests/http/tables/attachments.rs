//! Attachment files: uploads through the scope-id-free `/{scope}/tables/{id}/blobs`
//! router, cells that name them, downloads through the caller's rows checked
//! against the digest, and removal once no record holds a file.

use super::fixture::{BASE, Tables, code};
use crate::support::{As, json, multipart_file};
use chrono::Utc;
use domain::objects::{ObjectCommand, OwnedObject};
use domain::principal::{Actor, EventMetadata};
use reqwest::Method;
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

const PNG: &[u8] = b"\x89PNG\r\n\x1a\n pretend picture bytes";

/// A company table `files` with an attachment column `Photos` (images up to 1,000
/// bytes) and a text column `label`; returns the table path and its id.
async fn files(t: &Tables) -> (String, String) {
    let table = t.table("company", "boss", "files").await;
    t.column(
        &table,
        json!({"name": "Photos", "type": "attachment", "allowed_mime_types": ["image/*"], "max_file_bytes": 1000}),
    )
    .await;
    t.column(&table, json!({"name": "label", "type": "string"}))
        .await;
    let id = table.rsplit('/').next().unwrap().to_string();
    (table, id)
}

/// Posts one multipart `file` part to `path` as `user`.
async fn upload(
    t: &Tables,
    path: &str,
    user: &str,
    name: &str,
    mime: &str,
    bytes: &[u8],
) -> (u16, Value) {
    let (content_type, body) = multipart_file(name, mime, bytes);
    let response = t
        .app
        .request(Method::POST, path)
        .bearer_token(&t.token(user))
        .header("content-type", content_type)
        .body(body)
        .send()
        .await
        .unwrap();
    json(response).await
}

/// The scope-id-free blob router of a company table.
fn blobs(table_id: &str) -> String {
    format!("{BASE}/company/tables/{table_id}/blobs")
}

fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

async fn download(t: &Tables, table_id: &str, user: &str, blob_id: &str) -> reqwest::Response {
    t.app
        .request(Method::GET, &format!("{}/{blob_id}", blobs(table_id)))
        .bearer_token(&t.token(user))
        .send()
        .await
        .unwrap()
}

/// Where the local object store keeps a table's file.
fn stored_file(t: &Tables, table_id: &str, blob_id: &str) -> std::path::PathBuf {
    let company = t.seed.company("acme");
    let hex = blob_id.strip_prefix("sha256:").unwrap();
    t.app
        .data_dir()
        .join(format!("objects/attachments/{company}/{table_id}/{hex}"))
}

#[tokio::test]
async fn files_upload_into_cells_and_download_through_records() {
    let t = Tables::new().await;
    let (table, id) = files(&t).await;
    let path = format!("{}?column=Photos", blobs(&id));
    let (status, blob) = upload(&t, &path, "member", "cat.png", "image/png", PNG).await;
    assert_eq!(status, 201, "{blob}");
    assert_eq!(blob["blob_id"], digest(PNG));
    assert_eq!(blob["name"], "cat.png");
    assert_eq!(blob["mime_type"], "image/png");
    assert_eq!(blob["size"], PNG.len());
    let again = upload(&t, &path, "boss", "same.png", "image/png", PNG).await;
    assert_eq!(
        again.1["blob_id"], blob["blob_id"],
        "content-addressed: {}",
        again.1
    );
    assert!(stored_file(&t, &id, blob["blob_id"].as_str().unwrap()).is_file());

    // The upload answer is a cell item as it is; without a size the file's is used.
    let (status, record) = t
        .insert(
            &table,
            "member",
            json!({"Photos": [blob.clone()], "label": "a"}),
        )
        .await;
    assert_eq!(status, 201, "{record}");
    assert_eq!(record["data"]["Photos"][0]["blob_id"], blob["blob_id"]);
    let item = json!({"blob_id": blob["blob_id"], "name": "copy.png", "mime_type": "image/png"});
    let (status, copy) = t
        .insert(&table, "member", json!({"Photos": item, "label": "b"}))
        .await;
    assert_eq!(status, 201, "{copy}");
    assert_eq!(copy["data"]["Photos"][0]["size"], PNG.len());

    let response = download(&t, &id, "member", blob["blob_id"].as_str().unwrap()).await;
    assert_eq!(response.status(), 200);
    let headers = response.headers().clone();
    assert_eq!(headers["content-type"], "application/octet-stream");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert!(
        headers["content-disposition"]
            .to_str()
            .unwrap()
            .contains(".png"),
        "{headers:?}"
    );
    assert_eq!(response.bytes().await.unwrap().as_ref(), PNG);

    // Cells naming files the table does not hold, or with another size, change nothing.
    let unknown =
        json!({"blob_id": digest(b"never uploaded"), "name": "x.png", "mime_type": "image/png"});
    let wrong_size =
        json!({"blob_id": blob["blob_id"], "name": "x.png", "mime_type": "image/png", "size": 3});
    let malformed = json!({"blob_id": "b1", "name": "x.png", "mime_type": "image/png", "size": 3});
    for item in [unknown, wrong_size, malformed] {
        let got = t
            .insert(&table, "member", json!({"Photos": [item.clone()]}))
            .await;
        assert_eq!(got.0, 400, "{item}: {}", got.1);
        assert_eq!(code(&got), "invalid_record_value", "{item}: {}", got.1);
    }
    assert_eq!(t.records(&table, "boss").await["total"], 2);
}

#[tokio::test]
async fn uploads_are_checked_against_the_column_and_the_callers_write_access() {
    let t = Tables::new().await;
    let (table, id) = files(&t).await;
    let path = format!("{}?column=Photos", blobs(&id));
    let text = upload(&t, &path, "boss", "notes.txt", "text/plain", b"hello").await;
    assert_eq!(text.0, 422, "a type the column refuses: {}", text.1);
    let big = upload(&t, &path, "boss", "big.png", "image/png", &[7u8; 1001]).await;
    assert_eq!(big.0, 413, "over the column's max_file_bytes: {}", big.1);
    assert_eq!(code(&big), "request_too_large");
    let not_attachment = upload(
        &t,
        &format!("{}?column=label", blobs(&id)),
        "boss",
        "a.png",
        "image/png",
        PNG,
    )
    .await;
    assert_eq!(not_attachment.0, 400, "{}", not_attachment.1);
    let missing = t
        .app
        .request(Method::POST, &blobs(&id))
        .bearer_token(&t.token("boss"))
        .header("content-type", "multipart/form-data; boundary=x")
        .body("--x--\r\n")
        .send()
        .await
        .unwrap();
    assert_eq!(json(missing).await.0, 422, "no file part");

    // Readers who may neither insert nor edit may not upload; other companies see nothing.
    let readers = json!({"can_read": "all", "can_insert": false, "can_edit": "none"});
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{table}/default-permissions"),
            "boss",
            Some(readers),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let reader = upload(&t, &path, "member", "cat.png", "image/png", PNG).await;
    assert_eq!(reader.0, 403, "{}", reader.1);
    let stranger = upload(&t, &path, "ceo", "cat.png", "image/png", PNG).await;
    assert_eq!(stranger.0, 404, "{}", stranger.1);
    // Nothing of the refused uploads was kept.
    let company = t.seed.company("acme");
    let dir = t
        .app
        .data_dir()
        .join(format!("objects/attachments/{company}/{id}"));
    let kept: Vec<_> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().filter(|e| e.path().is_file()).collect())
        .unwrap_or_default();
    assert!(kept.is_empty(), "{kept:?}");
}

#[tokio::test]
async fn downloads_follow_the_callers_rows_and_the_digest() {
    let t = Tables::new().await;
    let (table, id) = files(&t).await;
    let path = format!("{}?column=Photos", blobs(&id));
    let open = upload(&t, &path, "boss", "open.png", "image/png", PNG)
        .await
        .1;
    let secret_bytes = b"\x89PNG secret";
    let secret = upload(&t, &path, "boss", "secret.png", "image/png", secret_bytes)
        .await
        .1;
    t.record(&table, json!({"Photos": [open.clone()], "label": "open"}))
        .await;
    t.record(
        &table,
        json!({"Photos": [secret.clone()], "label": "secret"}),
    )
    .await;
    let label = t.column_key(&table, "label").await;
    let policy = json!({"can_read": "filtered", "row_filter": {"column": label, "op": "eq", "value": "open"}});
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{table}/default-permissions"),
            "boss",
            Some(policy),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    let open_id = open["blob_id"].as_str().unwrap();
    let secret_id = secret["blob_id"].as_str().unwrap();
    assert_eq!(download(&t, &id, "member", open_id).await.status(), 200);
    assert_eq!(
        download(&t, &id, "member", secret_id).await.status(),
        404,
        "a row the member does not read"
    );
    assert_eq!(download(&t, &id, "boss", secret_id).await.status(), 200);
    assert_eq!(
        download(&t, &id, "ceo", open_id).await.status(),
        404,
        "another company"
    );
    assert_eq!(download(&t, &id, "member", "sha256:zz").await.status(), 404);
    let wrong_scope = t
        .app
        .request(
            Method::GET,
            &format!("{BASE}/department/tables/{id}/blobs/{open_id}"),
        )
        .bearer_token(&t.token("boss"))
        .send()
        .await
        .unwrap();
    assert_eq!(
        wrong_scope.status(),
        404,
        "a company table through the department router"
    );

    // Bytes changed in the store are not served as the file.
    std::fs::write(stored_file(&t, &id, secret_id), b"\x89PNG tamper").unwrap();
    // The connection is cut before the last chunk: before or after the head arrives.
    let tampered = t
        .app
        .request(Method::GET, &format!("{}/{secret_id}", blobs(&id)))
        .bearer_token(&t.token("boss"))
        .send()
        .await;
    let delivered = match tampered {
        Ok(response) => response.bytes().await.ok(),
        Err(_) => None,
    };
    assert_eq!(delivered, None, "the response is cut short");
}

#[tokio::test]
async fn files_go_once_no_record_holds_them() {
    let t = Tables::new().await;
    let (table, id) = files(&t).await;
    let path = format!("{}?column=Photos", blobs(&id));
    let held = upload(&t, &path, "boss", "held.png", "image/png", PNG)
        .await
        .1;
    let loose_bytes = b"\x89PNG never attached";
    let loose = upload(&t, &path, "boss", "loose.png", "image/png", loose_bytes)
        .await
        .1;
    let record = t
        .record(&table, json!({"Photos": [held.clone()], "label": "a"}))
        .await;
    let held_id = held["blob_id"].as_str().unwrap();
    let loose_id = loose["blob_id"].as_str().unwrap();
    let runtime = &t.app.state.runtime;
    let sweep = |hours: i64| {
        api::runtime::janitor::sweep_attachments(
            runtime,
            Utc::now() + chrono::Duration::hours(hours),
        )
    };

    sweep(0).await.unwrap();
    assert!(
        stored_file(&t, &id, loose_id).is_file(),
        "a fresh upload waits for its cell"
    );
    sweep(3).await.unwrap();
    assert!(
        !stored_file(&t, &id, loose_id).exists(),
        "an upload nobody attached goes"
    );
    assert!(stored_file(&t, &id, held_id).is_file(), "a held file stays");

    // A sweep that stopped after marking an upload for deletion, before its bytes
    // went, is finished by the next one.
    let stuck_bytes = b"\x89PNG marked, never deleted";
    let stuck = upload(&t, &path, "boss", "stuck.png", "image/png", stuck_bytes)
        .await
        .1;
    let stuck_id = stuck["blob_id"].as_str().unwrap();
    let hex = stuck_id.strip_prefix("sha256:").unwrap();
    let object: uuid::Uuid = sqlx::query_scalar(
        "SELECT id FROM owned_objects WHERE kind = 'attachment' AND key LIKE '%/' || $1",
    )
    .bind(hex)
    .fetch_one(&t.app.state.pool)
    .await
    .unwrap();
    let meta = EventMetadata {
        actor: Actor::System("janitor"),
        company_id: Some(t.seed.company("acme")),
        request_id: "a sweep that stopped".into(),
        time: Utc::now(),
    };
    runtime
        .bus
        .record::<OwnedObject>(&object.to_string(), ObjectCommand::RequestDeletion, &meta)
        .await
        .unwrap();
    sweep(3).await.unwrap();
    assert!(
        !stored_file(&t, &id, stuck_id).exists(),
        "the next sweep deletes the bytes"
    );
    let state: String =
        sqlx::query_scalar("SELECT deletion_state FROM owned_objects WHERE id = $1")
            .bind(object)
            .fetch_one(&t.app.state.pool)
            .await
            .unwrap();
    assert_eq!(state, "deleted");

    let record_path = format!("{table}/records/{}", record["id"].as_str().unwrap());
    let (status, body) = t.call(Method::DELETE, &record_path, "boss", None).await;
    assert_eq!(status, 200, "{body}");
    sweep(3).await.unwrap();
    assert!(
        !stored_file(&t, &id, held_id).exists(),
        "the file went with its record"
    );
    assert_eq!(download(&t, &id, "boss", held_id).await.status(), 404);
    let gone = t
        .insert(&table, "boss", json!({"Photos": [held.clone()]}))
        .await;
    assert_eq!(gone.0, 400, "a removed file cannot be named: {}", gone.1);

    // Uploading the bytes again brings the file back.
    let back = upload(&t, &path, "boss", "held.png", "image/png", PNG).await;
    assert_eq!(back.0, 201, "{}", back.1);
    let (status, body) = t
        .insert(&table, "boss", json!({"Photos": [back.1.clone()]}))
        .await;
    assert_eq!(status, 201, "{body}");
    assert_eq!(download(&t, &id, "boss", held_id).await.status(), 200);

    // Deleting the table lets go of every file it held.
    let (status, body) = t.call(Method::DELETE, &table, "boss", None).await;
    assert_eq!(status, 200, "{body}");
    sweep(3).await.unwrap();
    assert!(
        !stored_file(&t, &id, held_id).exists(),
        "the file went with its table"
    );
}
