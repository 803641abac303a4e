//! The department import over HTTP (spec `custom-tables.md` section 4, 5.10.0):
//! any user of the company uploads a CSV or XLSX file and previews it; the rows go
//! into an existing table with insert access on it, or into a new table when the
//! uploader manages the department; all rows or none.

use super::fixture::{Tables, code};
use crate::support::{As, json as read_json, multipart_file};
use reqwest::Method;
use serde_json::{Value, json};

const CSV: &str = "Name,Qty,Due,Done\nAda,3,2026-01-02,true\nBob,,2026-02-03,false\n";

async fn upload(t: &Tables, user: &str, name: &str, bytes: &[u8]) -> (u16, Value) {
    let path = format!("{}/import/extract", t.mount("department:rnd"));
    let (content_type, body) = multipart_file(name, "application/octet-stream", bytes);
    let mut request = t
        .app
        .request(Method::POST, &path)
        .header("content-type", content_type)
        .body(body);
    request = if user == "line1" {
        request.api_key(&t.seed.key("acme", "line"))
    } else {
        request.bearer_token(&t.token(user))
    };
    read_json(request.send().await.unwrap()).await
}

fn import(t: &Tables, sid: &Value) -> String {
    format!(
        "{}/import/{}",
        t.mount("department:rnd"),
        sid.as_str().unwrap()
    )
}

#[tokio::test]
async fn any_company_user_previews_an_upload_and_rows_go_in_whole_or_not_at_all() {
    let t = Tables::new().await;
    let (s, session) = upload(&t, "member", "leads.csv", CSV.as_bytes()).await;
    assert_eq!(s, 201, "{session}");
    let types: Vec<(&str, &str)> = session["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| {
            (
                c["header"].as_str().unwrap(),
                c["inferred_type"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        types,
        [
            ("Name", "string"),
            ("Qty", "integer"),
            ("Due", "date"),
            ("Done", "boolean")
        ]
    );
    assert_eq!(
        session["preview"][1],
        json!(["Bob", null, "2026-02-03", "false"])
    );
    assert_eq!(
        (session["total_rows"].as_u64(), session["state"].as_str()),
        (Some(2), Some("extracted"))
    );
    let path = import(&t, &session["sid"]);

    // Same-company login is enough to upload and preview; the session is the uploader's.
    assert_eq!(upload(&t, "outsider", "x.csv", CSV.as_bytes()).await.0, 201);
    assert_eq!(upload(&t, "ceo", "x.csv", CSV.as_bytes()).await.0, 404);
    assert_eq!(upload(&t, "line1", "x.csv", CSV.as_bytes()).await.0, 403);
    let bad = upload(&t, "member", "x.pdf", b"%PDF-1.4").await;
    assert_eq!((bad.0, code(&bad)), (400, "import_file_invalid"));
    let ragged = upload(&t, "member", "x.csv", b"A\n1,2\n").await;
    assert_eq!((ragged.0, code(&ragged)), (400, "import_file_invalid"));
    assert_eq!(t.call(Method::GET, &path, "member", None).await.0, 200);
    assert_eq!(t.call(Method::GET, &path, "dm", None).await.0, 404);

    // A new table needs department management.
    let new = json!({"new_table": {"name": "Leads"}});
    let (s, _) = t
        .call(Method::POST, &format!("{path}/map"), "member", Some(new))
        .await;
    assert_eq!(s, 403);

    // Into an existing table: a refused row refuses them all.
    let table = t.table("department:rnd", "dm", "Leads").await;
    for (name, kind) in [("Name", "string"), ("Qty", "integer")] {
        t.column(&table, json!({"name": name, "type": kind})).await;
    }
    let table_id = table.rsplit('/').next().unwrap();
    let bad_rows = "Name,Qty\nAda,3\nBob,lots\nCy,4\n";
    let (_, bad_session) = upload(&t, "member", "bad.csv", bad_rows.as_bytes()).await;
    let before = t.app.event_count().await;
    let got = t
        .call(
            Method::POST,
            &format!("{}/map", import(&t, &bad_session["sid"])),
            "member",
            Some(json!({"table_id": table_id})),
        )
        .await;
    assert_eq!(
        (got.0, code(&got)),
        (422, "import_rows_invalid"),
        "{}",
        got.1
    );
    assert_eq!(got.1["detail"]["errors"][0]["row"], 3);
    assert_eq!(t.app.event_count().await, before, "nothing was imported");
    assert_eq!(t.records(&table, "dm").await["total"], 0);

    let (s, _) = t
        .call(
            Method::POST,
            &format!("{path}/map"),
            "outsider",
            Some(json!({"table_id": table_id})),
        )
        .await;
    assert_eq!(s, 404, "not the uploader's session");
    let map = json!({"table_id": table_id, "columns": [{"source": 0, "target": "Name"}, {"source": 1, "target": "Qty"}]});
    let (s, done) = t
        .call(
            Method::POST,
            &format!("{path}/map"),
            "member",
            Some(map.clone()),
        )
        .await;
    assert_eq!(s, 200, "{done}");
    assert_eq!(
        (
            done["state"].as_str(),
            done["imported"].as_u64(),
            done["created_table"].as_bool()
        ),
        (Some("imported"), Some(2), Some(false))
    );
    let page = t.records(&table, "dm").await;
    assert_eq!(page["total"], 2);
    let again = t
        .call(Method::POST, &format!("{path}/map"), "member", Some(map))
        .await;
    assert_eq!((again.0, code(&again)), (409, "already_exists"));
    let (_, shown) = t.call(Method::GET, &path, "member", None).await;
    assert_eq!(shown["table_id"], table_id);
}

#[tokio::test]
async fn a_department_manager_imports_an_xlsx_file_into_a_new_table() {
    let t = Tables::new().await;
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    sheet.set_name("Stock").unwrap();
    for (c, header) in ["Item", "Price", "Since"].iter().enumerate() {
        sheet.write_string(0, c as u16, *header).unwrap();
    }
    sheet.write_string(1, 0, "bolt").unwrap();
    sheet.write_number(1, 1, 1.5).unwrap();
    sheet.write_string(1, 2, "2026-03-04").unwrap();
    sheet.write_string(2, 0, "nut").unwrap();
    sheet.write_number(2, 1, 2.0).unwrap();
    let bytes = book.save_to_buffer().unwrap();
    let (s, session) = upload(&t, "dm", "stock.xlsx", &bytes).await;
    assert_eq!(s, 201, "{session}");
    assert_eq!(
        (session["format"].as_str(), session["sheet"].as_str()),
        (Some("xlsx"), Some("Stock"))
    );
    let types: Vec<&str> = session["columns"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["inferred_type"].as_str().unwrap())
        .collect();
    assert_eq!(types, ["string", "float", "date"]);
    let path = import(&t, &session["sid"]);
    let refused =
        json!({"new_table": {"name": "Stock"}, "columns": [{"source": 0, "type": "user"}]});
    let (s, body) = t
        .call(Method::POST, &format!("{path}/map"), "dm", Some(refused))
        .await;
    assert_eq!(s, 422, "{body}");
    let both = json!({"new_table": {"name": "Stock"}, "table_id": uuid::Uuid::new_v4()});
    assert_eq!(
        t.call(Method::POST, &format!("{path}/map"), "dm", Some(both))
            .await
            .0,
        422
    );
    let (s, done) = t
        .call(
            Method::POST,
            &format!("{path}/map"),
            "dm",
            Some(json!({"new_table": {"name": "Stock"}})),
        )
        .await;
    assert_eq!(s, 200, "{done}");
    assert_eq!(
        (done["imported"].as_u64(), done["created_table"].as_bool()),
        (Some(2), Some(true))
    );
    let table = format!(
        "{}/tables/{}",
        t.mount("department:rnd"),
        done["table_id"].as_str().unwrap()
    );
    let (_, columns) = t
        .call(Method::GET, &format!("{table}/columns"), "dm", None)
        .await;
    let made: Vec<(&str, &str)> = columns
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["name"].as_str().unwrap(), c["type"].as_str().unwrap()))
        .collect();
    assert_eq!(
        made,
        [("Item", "string"), ("Price", "float"), ("Since", "date")]
    );
    let page = t.records(&table, "member").await;
    assert_eq!(page["total"], 2, "{page}");
    let bolt = page["records"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["data"]["Item"] == "bolt")
        .unwrap()
        .clone();
    assert_eq!(
        (
            bolt["data"]["Price"].as_f64(),
            bolt["data"]["Since"].as_str()
        ),
        (Some(1.5), Some("2026-03-04"))
    );
}

#[tokio::test]
async fn an_xlsx_file_is_read_cell_by_cell_within_the_limits() {
    let t = Tables::new().await;
    // Two cells whose bounding box is 1,048,576 x 16,384 cells: refused, not
    // allocated (the process aborted on it).
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    sheet.write_string(0, 0, "a").unwrap();
    sheet.write_string(1_048_575, 16_383, "z").unwrap();
    let (s, refused) = upload(&t, "member", "far.xlsx", &book.save_to_buffer().unwrap()).await;
    assert_eq!(
        (s, code(&(s, refused.clone()))),
        (400, "import_file_invalid")
    );
    assert!(
        refused.to_string().contains("more than 100 columns"),
        "{refused}"
    );
    // Far apart rows of one column are two rows: the empty ones between are skipped.
    let mut book = rust_xlsxwriter::Workbook::new();
    let sheet = book.add_worksheet();
    sheet.write_string(3, 2, "Due").unwrap();
    sheet.write_string(1_048_575, 2, "2026-1-2").unwrap();
    let (s, session) = upload(&t, "member", "tall.xlsx", &book.save_to_buffer().unwrap()).await;
    assert_eq!(s, 201, "{session}");
    assert_eq!(session["columns"][0]["header"], "Due", "{session}");
    // `2026-1-2` is not a date a date column takes: the column is a string.
    assert_eq!(
        session["columns"][0]["inferred_type"], "string",
        "{session}"
    );
    assert_eq!(session["total_rows"], 1, "{session}");
}
