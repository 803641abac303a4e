//! Refusals swept over the routes of the OpenAPI document: another company reaches
//! nothing on any custom-table route, and table-manager routes refuse everyone else
//! in every scope.

use super::fixture::{BASE, Tables};
use reqwest::Method;
use serde_json::{Value, json};

/// A body every route accepts the shape of, by the route's last segments.
fn body_for(method: &str, path: &str, subject: &str) -> Option<Value> {
    let tail = |s: &str| path.ends_with(s);
    let command = json!({"table_id": uuid::Uuid::nil(), "name": "x", "kind": "write",
                         "inputs": {}, "write": {"op": "create", "values": {"n": 1}}});
    Some(match method {
        "GET" | "DELETE" => return None,
        "POST" if tail("/tables") => json!({"name": "x"}),
        "POST" if tail("/columns") || tail("/columns/preview") => {
            json!({"name": "x", "type": "integer"})
        }
        "POST" if tail("/records") => json!({"data": {}}),
        "POST" if tail("/records/aggregate") => json!({"aggregations": [{"op": "count"}]}),
        "POST" if tail("/records/export") => json!({"format": "csv"}),
        "POST" if tail("/views") => json!({"name": "v"}),
        "POST" if tail("/public-read-tokens") => json!({"view_id": uuid::Uuid::nil()}),
        "POST" if tail("/callback-tokens") => json!({"name": "x"}),
        "POST" if tail("/permissions") => {
            json!({"subject_type": "user", "subject_id": subject, "can_read": "all"})
        }
        "PUT" if tail("/records/{record_id}") => json!({"data": {}}),
        "PUT" if tail("/triggers") => json!({"triggers": []}),
        "PUT" if tail("/rules") => json!({"rules": []}),
        "PUT" if path.contains("permissions/") => json!({"can_read": "all"}),
        "PATCH" if tail("/client-access") => json!({"enabled": true}),
        "POST" if tail("/client-access/unlock") => json!({"passphrase": "a passphrase"}),
        "POST" if tail("/table-tags") => json!({"name": "x"}),
        "POST" if tail("/commands") => command.clone(),
        "PUT" if tail("/commands/{command_id}") => command.clone(),
        "POST" if tail("/execute") || tail("/query") => json!({"inputs": {}}),
        _ => json!({}),
    })
}

/// Path parameters of the acme fixtures.
struct Ids {
    pairs: Vec<(&'static str, String)>,
    /// (path, id) of a chatroom (lab), a department (rnd) and a company table.
    tables: [(String, String); 3],
}

impl Ids {
    fn path(&self, template: &str) -> String {
        let mount = ["/chatroom/", "/department/", "/company/"]
            .iter()
            .position(|m| template.contains(m))
            .unwrap_or(2);
        let mut path = template.replace("{table_id}", &self.tables[mount].1);
        for (name, value) in &self.pairs {
            path = path.replace(&format!("{{{name}}}"), value);
        }
        path
    }
}

async fn fixtures(t: &Tables) -> Ids {
    let mut tables = Vec::new();
    for (scope, creator) in [
        ("chatroom:lab", "dm"),
        ("department:rnd", "dm"),
        ("company", "boss"),
    ] {
        let table = t.table(scope, creator, "swept").await;
        let id = table.rsplit('/').next().unwrap().to_string();
        tables.push((table, id));
    }
    let company = &tables[2].0;
    let column = t
        .column(company, json!({"name": "n", "type": "integer"}))
        .await;
    let record = t.record(company, json!({"n": 1})).await["id"]
        .as_str()
        .unwrap()
        .to_string();
    let (_, view) = t
        .call(
            Method::POST,
            &format!("{company}/views"),
            "boss",
            Some(json!({"name": "v"})),
        )
        .await;
    let member = t.user("member").to_string();
    Ids {
        pairs: vec![
            ("chatroom_id", t.seed.room("acme", "lab").to_string()),
            ("department_id", t.department("rnd").to_string()),
            ("record_id", record),
            ("column_id", column),
            ("view_id", view["id"].as_str().unwrap().to_string()),
            ("subject_type", "user".into()),
            ("subject_id", member),
            ("client_id", t.client().to_string()),
            ("migration_id", uuid::Uuid::new_v4().to_string()),
            ("token_id", uuid::Uuid::new_v4().to_string()),
            ("run_id", uuid::Uuid::new_v4().to_string()),
            ("command_id", uuid::Uuid::new_v4().to_string()),
        ],
        tables: tables.try_into().unwrap(),
    }
}

async fn routes(t: &Tables) -> Vec<(String, String)> {
    let (_, doc) = t.call(Method::GET, "/openapi.json", "boss", None).await;
    let mut out = Vec::new();
    for (path, item) in doc["paths"].as_object().unwrap() {
        if path.starts_with(BASE) {
            for method in item.as_object().unwrap().keys() {
                out.push((method.to_uppercase(), path.clone()));
            }
        }
    }
    out
}

#[tokio::test]
async fn other_companies_see_nothing() {
    let t = Tables::new().await;
    let ids = fixtures(&t).await;
    let routes = routes(&t).await;
    assert!(routes.len() > 50, "{} routes", routes.len());
    let member = t.user("member").to_string();
    for (method, template) in routes {
        let path = ids.path(&template);
        let body = body_for(&method, &template, &member);
        let method = Method::from_bytes(method.as_bytes()).unwrap();
        let (status, answer) = t.call(method.clone(), &path, "ceo", body).await;
        if !template.contains('{') {
            // The company mount names no company: the CEO lists and creates in its own.
            for (_, id) in &ids.tables {
                assert!(
                    !answer.to_string().contains(id.as_str()),
                    "{method} {template}: {answer}"
                );
            }
            continue;
        }
        assert_eq!(
            status, 404,
            "{method} {template} as another company's CEO: {answer}"
        );
        // A table route says the table is not found; others answer the uniform 404,
        // or the table's when the body names one.
        let table = json!({"detail": "Custom table not found"});
        if template.contains("{table_id}") {
            assert_eq!(answer, table, "{method} {template}");
        } else if answer != table {
            assert_eq!(
                answer,
                json!({"detail": "Not found"}),
                "{method} {template}"
            );
        }
    }
}

/// Routes only a table's managers may use, with the scopes they exist in.
const MANAGER_ROUTES: [(&str, &str); 20] = [
    ("PATCH", "/tables/{table_id}"),
    ("DELETE", "/tables/{table_id}"),
    ("POST", "/tables/{table_id}/views"),
    ("PATCH", "/tables/{table_id}/views/{view_id}"),
    ("DELETE", "/tables/{table_id}/views/{view_id}"),
    ("POST", "/tables/{table_id}/columns/preview"),
    ("PATCH", "/tables/{table_id}/columns/{column_id}"),
    ("DELETE", "/tables/{table_id}/columns/{column_id}"),
    ("GET", "/tables/{table_id}/permissions"),
    ("POST", "/tables/{table_id}/permissions"),
    (
        "DELETE",
        "/tables/{table_id}/permissions/{subject_type}/{subject_id}",
    ),
    ("PUT", "/tables/{table_id}/client-permissions/{client_id}"),
    (
        "DELETE",
        "/tables/{table_id}/client-permissions/{client_id}",
    ),
    ("PATCH", "/tables/{table_id}/default-permissions"),
    ("PATCH", "/tables/{table_id}/client-access"),
    (
        "GET",
        "/tables/{table_id}/department-permissions/{department_id}",
    ),
    (
        "PUT",
        "/tables/{table_id}/department-permissions/{department_id}",
    ),
    (
        "DELETE",
        "/tables/{table_id}/department-permissions/{department_id}",
    ),
    (
        "GET",
        "/tables/{table_id}/chatroom-permissions/{chatroom_id}",
    ),
    (
        "PUT",
        "/tables/{table_id}/chatroom-permissions/{chatroom_id}",
    ),
];

#[tokio::test]
async fn manager_routes_refuse_everyone_else() {
    let t = Tables::new().await;
    let ids = fixtures(&t).await;
    let company = &ids.tables[2].0;
    // A view and a column on every table, so the routes find them.
    let mut per_table = Vec::new();
    for (table, _) in &ids.tables {
        let manager = if table.contains("/company/") {
            "boss"
        } else {
            "dm"
        };
        let (_, view) = t
            .call(
                Method::POST,
                &format!("{table}/views"),
                manager,
                Some(json!({"name": "v"})),
            )
            .await;
        let (_, column) = t
            .add_column(table, manager, json!({"name": "m", "type": "integer"}))
            .await;
        per_table.push((view["id"].clone(), column["column"]["id"].clone()));
    }
    let member = t.user("member").to_string();
    let mut checked = 0;
    for ((table, _), (view, column)) in ids.tables.iter().zip(&per_table) {
        for (method, tail) in MANAGER_ROUTES
            .iter()
            .chain(
                [(
                    "DELETE",
                    "/tables/{table_id}/chatroom-permissions/{chatroom_id}",
                )]
                .iter(),
            )
            .chain([("PUT", "/tables/{table_id}/columns/{column_id}")].iter())
        {
            let exists = match *tail {
                t if t.contains("department-permissions") => table.contains("/chatroom/"),
                t if t.contains("chatroom-permissions") => table.contains("/department/"),
                _ if *method == "PUT" && tail.ends_with("{column_id}") => table == company,
                _ => true,
            };
            if !exists {
                continue;
            }
            let rest = tail.trim_start_matches("/tables/{table_id}");
            let mut path = format!("{table}{rest}")
                .replace("{view_id}", view.as_str().unwrap())
                .replace("{column_id}", column.as_str().unwrap());
            for (name, value) in &ids.pairs {
                path = path.replace(&format!("{{{name}}}"), value);
            }
            let body = body_for(method, tail, &member);
            let verb = Method::from_bytes(method.as_bytes()).unwrap();
            let (status, answer) = t.call(verb, &path, "member", body).await;
            assert_eq!(status, 403, "{method} {path} as a member: {answer}");
            assert_eq!(
                answer["detail"], "Insufficient permissions.",
                "{method} {path}"
            );
            checked += 1;
        }
    }
    assert!(checked >= 50, "{checked} refusals checked");
}

#[tokio::test]
async fn readers_only_reach_rows_and_views() {
    let t = Tables::new().await;
    let table = t.table("company", "boss", "closed").await;
    t.column(&table, json!({"name": "n", "type": "integer"}))
        .await;
    t.record(&table, json!({"n": 1})).await;
    let (_, view) = t
        .call(
            Method::POST,
            &format!("{table}/views"),
            "boss",
            Some(json!({"name": "v"})),
        )
        .await;
    let view = view["id"].as_str().unwrap();
    let (status, _) = t
        .call(
            Method::PATCH,
            &format!("{table}/default-permissions"),
            "boss",
            Some(json!({"can_read": "none", "can_insert": false, "can_edit": "none"})),
        )
        .await;
    assert_eq!(status, 200);
    let reads = [
        (Method::GET, format!("{table}/records"), None),
        (
            Method::POST,
            format!("{table}/records/search"),
            Some(json!({})),
        ),
        (
            Method::POST,
            format!("{table}/records/aggregate"),
            Some(json!({"aggregations": [{"op": "count"}]})),
        ),
        (
            Method::POST,
            format!("{table}/records/export"),
            Some(json!({"format": "csv"})),
        ),
        (Method::GET, format!("{table}/views"), None),
        (Method::GET, format!("{table}/views/{view}"), None),
        (
            Method::POST,
            format!("{table}/records"),
            Some(json!({"data": {"n": 2}})),
        ),
    ];
    for (method, path, body) in reads {
        let (status, answer) = t.call(method.clone(), &path, "member", body).await;
        assert_eq!(status, 403, "{method} {path}: {answer}");
    }
    let (status, detail) = t.call(Method::GET, &table, "member", None).await;
    assert_eq!((status, detail["record_count"].clone()), (200, json!(0)));
    let (_, me) = t
        .call(
            Method::GET,
            &format!("{table}/permissions/me"),
            "member",
            None,
        )
        .await;
    assert_eq!(
        (me["source"].clone(), me["can_read"].clone()),
        (json!("default"), json!("none"))
    );
    // A department table is invisible to a company user outside the department.
    let rnd = t.table("department:rnd", "dm", "rnd").await;
    let (status, _) = t
        .call(
            Method::GET,
            &format!("{rnd}/permissions/me"),
            "outsider",
            None,
        )
        .await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn tables_are_created_by_users_entering_the_scope() {
    let t = Tables::new().await;
    let got = t
        .call(
            Method::POST,
            &format!("{}/tables", t.mount("department:rnd")),
            "outsider",
            Some(json!({"name": "x"})),
        )
        .await;
    assert_eq!(got.0, 404, "{}", got.1);
    let got = t
        .call(
            Method::POST,
            &format!("{}/tables", t.mount("chatroom:lab")),
            "line1",
            Some(json!({"name": "x"})),
        )
        .await;
    assert_eq!(
        got.0, 403,
        "social media clients create no tables: {}",
        got.1
    );
    let (status, list) = t
        .call(
            Method::GET,
            &format!("{}/tables", t.mount("chatroom:lab")),
            "boss",
            None,
        )
        .await;
    assert_eq!(
        (status, list["total"].clone()),
        (200, json!(0)),
        "nothing was created"
    );
}
