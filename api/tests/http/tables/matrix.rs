//! The golden permission matrix (`permission_matrix.json`): every ladder step with a
//! table manager, a member, a department manager, room members and a social media
//! client, over every record operation, and no response that shows a row or a
//! column the caller's grant hides.

use super::fixture::Tables;
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};

const MATRIX: &str = include_str!("permission_matrix.json");

/// The rows of the matrix: label, creator, n.
const ROWS: [(&str, &str, i64); 6] = [
    ("b1", "boss", 1),
    ("b5", "boss", 5),
    ("m3", "member", 3),
    ("d4", "dm", 4),
    ("r7", "roamer", 7),
    ("c9", "line1", 9),
];

/// Builds the matrix's table, rows and grants; returns the table path and the row
/// ids by label.
async fn scenario(t: &Tables) -> (String, BTreeMap<String, String>) {
    let table = t.table("company", "boss", "matrix").await;
    for (name, kind) in [("label", "string"), ("n", "integer"), ("note", "string")] {
        t.column(&table, json!({"name": name, "type": kind})).await;
    }
    let client = t.client();
    let grant = |body: Value| Some(body);
    let (status, body) = t
        .call(
            Method::PUT,
            &format!("{table}/client-permissions/{client}"),
            "boss",
            grant(json!({"can_read": "own", "can_insert": true, "can_edit": "own"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let mut ids = BTreeMap::new();
    for (label, creator, n) in ROWS {
        let data = json!({"label": label, "n": n, "note": format!("secret-{label}")});
        let (status, body) = t.insert(&table, creator, data).await;
        assert_eq!(status, 201, "{creator} inserts {label}: {body}");
        ids.insert(label.to_string(), body["id"].as_str().unwrap().to_string());
    }
    let member = t.user("member");
    let grants = [
        json!({"subject_type": "user", "subject_id": member, "can_read": "own", "can_insert": true, "can_edit": "own"}),
        json!({"subject_type": "department", "subject_id": t.department("rnd"), "can_read": "filtered",
               "row_filter": {"column": "$n", "op": "gte", "value": 3}, "hidden_columns": ["note"]}),
        json!({"subject_type": "chatroom", "subject_id": t.seed.room("acme", "lab"), "can_read": "filtered",
               "can_insert": true, "can_edit": "all",
               "row_filter": {"column": "$n", "op": "lt", "value": 5}, "hidden_columns": ["note", "n"]}),
        json!({"subject_type": "chatroom", "subject_id": t.seed.room("acme", "ops-room"), "can_read": "filtered",
               "row_filter": {"column": "$n", "op": "gte", "value": 7}, "hidden_columns": ["note"]}),
    ];
    let n_key = t.column_key(&table, "n").await;
    for g in grants {
        let body: Value = serde_json::from_str(&g.to_string().replace("$n", &n_key)).unwrap();
        let (status, answer) = t
            .call(
                Method::POST,
                &format!("{table}/permissions"),
                "boss",
                Some(body),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    let (status, body) = t
        .call(
            Method::PATCH,
            &format!("{table}/default-permissions"),
            "boss",
            Some(json!({"can_read": "all", "can_insert": false, "can_edit": "own", "hidden_columns": ["note"]})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    for view in [
        json!({"name": "by note", "filter": {"column": "note", "op": "is_not_null"}}),
        json!({"name": "with note", "columns": ["label", "note"]}),
    ] {
        let (status, body) = t
            .call(Method::POST, &format!("{table}/views"), "boss", Some(view))
            .await;
        assert_eq!(status, 201, "{body}");
    }
    (table, ids)
}

fn labels(page: &Value) -> BTreeSet<String> {
    page["records"]
        .as_array()
        .unwrap_or_else(|| panic!("a page: {page}"))
        .iter()
        .map(|r| r["data"]["label"].as_str().unwrap().to_string())
        .collect()
}

fn set(values: &Value) -> BTreeSet<String> {
    values
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

/// What a caller's responses must never show: labels of rows it does not read and
/// the values of columns hidden from it.
fn assert_nothing_hidden(
    caller: &str,
    text: &str,
    rows: &BTreeSet<String>,
    hidden: &BTreeSet<String>,
) {
    for (label, ..) in ROWS {
        if !rows.contains(label) {
            assert!(
                !text.contains(&format!("\"{label}\"")),
                "{caller} saw row {label}: {text}"
            );
        }
    }
    if hidden.contains("note") {
        assert!(
            !text.contains("secret-"),
            "{caller} saw the hidden note: {text}"
        );
        assert!(
            !text.contains("\"note\""),
            "{caller} saw the hidden column's name: {text}"
        );
    }
}

#[tokio::test]
async fn golden_permission_matrix() {
    let t = Tables::with_cast().await;
    let (table, ids) = scenario(&t).await;
    let matrix: Value = serde_json::from_str(MATRIX).unwrap();
    let callers = matrix["callers"].as_object().unwrap();
    for (caller, expected) in callers {
        let rows = set(&expected["rows"]);
        let editable = set(&expected["editable"]);
        let hidden = set(&expected["hidden"]);
        let mut seen = String::new();

        let (status, me) = t
            .call(
                Method::GET,
                &format!("{table}/permissions/me"),
                caller,
                None,
            )
            .await;
        assert_eq!(status, 200, "{caller}: {me}");
        assert_eq!(me["source"], expected["source"], "{caller}: {me}");
        assert_eq!(me["can_insert"], expected["insert"], "{caller}: {me}");

        let (status, page) = t
            .call(
                Method::GET,
                &format!("{table}/records?limit=100"),
                caller,
                None,
            )
            .await;
        assert_eq!(status, 200, "{caller}: {page}");
        assert_eq!(labels(&page), rows, "{caller} lists");
        assert_eq!(page["total"], rows.len(), "{caller} total");
        for record in page["records"].as_array().unwrap() {
            let label = record["data"]["label"].as_str().unwrap();
            assert_eq!(
                record["can_edit"],
                editable.contains(label),
                "{caller} can_edit {label}"
            );
            for column in &hidden {
                assert!(
                    record["data"].get(column).is_none(),
                    "{caller} got {column}"
                );
            }
        }
        seen.push_str(&page.to_string());

        let search_path = format!("{table}/records/search");
        let search = |body: Value| t.call(Method::POST, &search_path, caller, Some(body));
        let (status, found) = search(json!({"limit": 100})).await;
        assert_eq!(status, 200, "{caller}: {found}");
        assert_eq!(labels(&found), rows, "{caller} searches");
        let (_, mine) = search(json!({"editable": true, "limit": 100})).await;
        assert_eq!(labels(&mine), editable, "{caller} editable=true");
        let (_, others) = search(json!({"editable": false, "limit": 100})).await;
        let rest: BTreeSet<String> = rows.difference(&editable).cloned().collect();
        assert_eq!(labels(&others), rest, "{caller} editable=false");
        seen.push_str(&others.to_string());
        // Nothing is ever staged for approval here: pending rows are none, and the
        // flag ANDs with `editable` before the total.
        let (_, pending) = search(json!({"pending_approval": true, "limit": 100})).await;
        assert_eq!(pending["total"], 0, "{caller} pending_approval=true");
        let (_, settled) =
            search(json!({"pending_approval": false, "editable": true, "limit": 100})).await;
        assert_eq!(
            labels(&settled),
            editable,
            "{caller} pending_approval=false and editable"
        );
        let (status, listed) = t
            .call(
                Method::GET,
                &format!("{table}/records?editable=false&limit=100"),
                caller,
                None,
            )
            .await;
        assert_eq!(status, 200, "{caller}: {listed}");
        assert_eq!(
            labels(&listed),
            rows,
            "{caller}: the list does not take search-only flags"
        );

        let (status, detail) = t.call(Method::GET, &table, caller, None).await;
        assert_eq!(status, 200, "{caller}: {detail}");
        assert_eq!(detail["record_count"], rows.len(), "{caller} record_count");
        seen.push_str(&detail.to_string());
        if caller != "line1" {
            let (_, list) = t
                .call(
                    Method::GET,
                    &format!("{}/tables", t.mount("company")),
                    caller,
                    None,
                )
                .await;
            let listed = list["tables"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| table.ends_with(x["id"].as_str().unwrap()));
            assert_eq!(
                listed.unwrap()["record_count"],
                rows.len(),
                "{caller} list record_count"
            );
        }

        let (status, aggregate) = t
            .call(
                Method::POST,
                &format!("{table}/records/aggregate"),
                caller,
                Some(json!({"aggregations": [{"op": "count"}]})),
            )
            .await;
        assert_eq!(status, 200, "{caller}: {aggregate}");
        assert_eq!(
            aggregate["groups"][0]["values"]["count"],
            rows.len(),
            "{caller} count"
        );

        let (status, csv) = t
            .call(
                Method::POST,
                &format!("{table}/records/export"),
                caller,
                Some(json!({"format": "csv"})),
            )
            .await;
        assert_eq!(status, 200, "{caller} export");
        let csv = csv.as_str().unwrap().to_string();
        assert_eq!(
            csv.lines().count(),
            rows.len() + 1,
            "{caller} export: {csv}"
        );
        let fields: BTreeSet<&str> = csv.lines().flat_map(|l| l.split(',')).collect();
        for (label, ..) in ROWS {
            assert!(
                rows.contains(label) || !fields.contains(label),
                "{caller} exported {label}"
            );
        }
        for column in &hidden {
            assert!(
                !fields.contains(column.as_str()),
                "{caller} exported column {column}"
            );
        }
        assert!(
            hidden.is_empty() || !csv.contains("secret-"),
            "{caller} exported a hidden note"
        );

        let (status, views) = t
            .call(Method::GET, &format!("{table}/views"), caller, None)
            .await;
        assert_eq!(status, 200, "{caller}: {views}");
        let names: Vec<&str> = views
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v["name"].as_str().unwrap())
            .collect();
        let filtered = views
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "by note");
        if hidden.contains("note") {
            assert_eq!(
                names,
                ["with note"],
                "{caller}: a view filtering by a hidden column is not shown"
            );
            assert_eq!(
                views[0]["columns"].as_array().unwrap().len(),
                1,
                "{caller}: {views}"
            );
        } else {
            assert_eq!(names, ["by note", "with note"], "{caller}");
            let view_id = filtered.unwrap()["id"].as_str().unwrap();
            let (_, page) = search(json!({"view_id": view_id, "limit": 100})).await;
            assert_eq!(labels(&page), rows, "{caller} through a view");
        }
        if hidden.contains("note") {
            let (status, body) =
                search(json!({"filter": {"column": "note", "op": "is_null"}})).await;
            assert_eq!(status, 400, "{caller} filters on a hidden column: {body}");
        }

        let no_edits = editable.is_empty();
        for (label, id) in &ids {
            let path = format!("{table}/records/{id}");
            let (status, one) = t.call(Method::GET, &path, caller, None).await;
            let visible = rows.contains(label);
            assert_eq!(
                status,
                if visible { 200 } else { 404 },
                "{caller} reads {label}"
            );
            seen.push_str(&one.to_string());
            let (status, _) = t
                .call(Method::PUT, &path, caller, Some(json!({"data": {}})))
                .await;
            let expected = if editable.contains(label) {
                200
            } else if no_edits || visible {
                403
            } else {
                404
            };
            assert_eq!(status, expected, "{caller} edits {label}");
        }
        assert_nothing_hidden(caller, &seen, &rows, &hidden);
    }
    for (caller, expected) in callers {
        let (status, body) = t
            .insert(&table, caller, json!({"label": format!("new by {caller}")}))
            .await;
        let allowed = expected["insert"].as_bool().unwrap();
        assert_eq!(
            status,
            if allowed { 201 } else { 403 },
            "{caller} inserts: {body}"
        );
    }
}
