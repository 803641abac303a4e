//! A property of declarative deployment over generated scopes: a document of
//! random tables (columns of every type, links between the tables, computed
//! columns, views, grants, triggers, client access) applies to a fresh company
//! scope; its export applies to an empty department scope and exports there as the
//! same document; and the plan of that document in either scope is empty.

use crate::support::{As, Seed, TestApp, json as read_json};
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use reqwest::Method;
use serde_json::{Value, json};

const BASE: &str = "/private/module/custom_tables";

/// Stored types a generated column may take (links and computed ones are added
/// by the table generator).
const STORED: [&str; 15] = [
    "string",
    "integer",
    "float",
    "boolean",
    "date",
    "datetime",
    "text",
    "select",
    "multi_select",
    "attachment",
    "json",
    "user",
    "social_client",
    "principal",
    "interval",
];

/// One generated table.
#[derive(Debug, Clone)]
struct GenTable {
    columns: Vec<usize>,
    link: Option<(usize, bool)>,
    formula: bool,
    rollup: bool,
    lookup: bool,
    views: Vec<(bool, bool)>,
    grants: Vec<(usize, usize, bool)>,
    trigger: bool,
    clients: bool,
    principal_default: usize,
}

fn table_strategy(tables: usize) -> impl Strategy<Value = GenTable> {
    (
        proptest::collection::vec(0..STORED.len(), 0..6),
        proptest::option::of((0..tables, any::<bool>())),
        (any::<bool>(), any::<bool>(), any::<bool>()),
        proptest::collection::vec((any::<bool>(), any::<bool>()), 0..3),
        proptest::collection::vec((0..4usize, 0..4usize, any::<bool>()), 0..4),
        (any::<bool>(), any::<bool>(), 0..3usize),
    )
        .prop_map(
            |(
                columns,
                link,
                (formula, rollup, lookup),
                views,
                grants,
                (trigger, clients, principal_default),
            )| GenTable {
                columns,
                link,
                formula,
                rollup,
                lookup,
                views,
                grants,
                trigger,
                clients,
                principal_default,
            },
        )
}

fn scope_strategy() -> impl Strategy<Value = Vec<GenTable>> {
    (1..4usize).prop_flat_map(|n| proptest::collection::vec(table_strategy(n), n))
}

/// The document of a generated scope.
fn document(tables: &[GenTable]) -> String {
    let mut rows: Vec<Value> = Vec::new();
    if tables[0].trigger {
        rows.push(json!({"kind": "system_tag", "ref": "tag", "system": "gen", "name": "Generated", "color": "#0a0b0c"}));
    }
    let name_key = |t: usize| format!("col_{t:x}0");
    for (t, table) in tables.iter().enumerate() {
        let tref = format!("t{t}");
        let row = |kind: &str, reference: String, fields: Value| {
            let mut row = json!({"kind": kind, "ref": reference, "system": "gen", "table": tref});
            row.as_object_mut()
                .unwrap()
                .extend(fields.as_object().unwrap().clone());
            row
        };
        rows.push(
            json!({"kind": "table", "ref": tref, "system": "gen", "name": format!("Table {t}")}),
        );
        let mut columns = vec![json!({"key": name_key(t), "name": "Name", "type": "string"})];
        let mut integer = None;
        for (j, kind) in table.columns.iter().enumerate() {
            let key = format!("col_{t:x}{:x}", j + 1);
            let mut column = json!({"key": key, "name": format!("C{j}"), "type": STORED[*kind]});
            match STORED[*kind] {
                "select" => column["options"] = json!(["a", "b"]),
                "multi_select" => column["options"] = json!(["x", "y", "z"]),
                "integer" => integer = Some(format!("C{j}")),
                "principal" => {
                    let default =
                        ["$user:member", "$room:lab", "$smc:line:U1"].get(table.principal_default);
                    if let Some(default) = default.filter(|_| j % 2 == 0) {
                        column["default_value"] = json!(default);
                    }
                }
                _ => {}
            }
            columns.push(column);
        }
        let link_key = format!("col_{t:x}a");
        if let Some((target, one)) = table.link {
            columns.push(json!({"key": link_key, "name": "Link", "type": "link",
                "target_table": format!("$table:t{target}"), "cardinality": if one { "one" } else { "many" }}));
            if table.rollup {
                columns.push(
                    json!({"key": format!("col_{t:x}b"), "name": "Count", "type": "rollup",
                    "link_field": link_key, "aggregation": "count"}),
                );
            }
            if table.lookup {
                columns.push(
                    json!({"key": format!("col_{t:x}c"), "name": "Seen", "type": "lookup",
                    "link_field": link_key, "target_column": name_key(target)}),
                );
            }
        }
        if let (true, Some(integer)) = (table.formula, integer) {
            columns.push(
                json!({"key": format!("col_{t:x}d"), "name": "Twice", "type": "formula",
                "expression": format!("[{integer}] * 2")}),
            );
        }
        for column in columns {
            let key = column["key"].as_str().unwrap().to_string();
            rows.push(row("column", format!("{tref}.{key}"), column));
        }
        for (v, (filtered, descending)) in table.views.iter().enumerate() {
            let filter = filtered.then(|| json!({"column": name_key(t), "op": "eq", "value": "x"}));
            rows.push(row("view", format!("{tref}.v{v}"), json!({"name": format!("View {v}"), "filter": filter,
                "sort": [{"column": name_key(t), "order": if *descending { "desc" } else { "asc" }}], "columns": null})));
        }
        let subjects = ["default", "$user:member", "$dept:R&D", "$room:lab"];
        let mut seen = Vec::new();
        for (subject, read, insert) in &table.grants {
            if seen.contains(subject) {
                continue;
            }
            seen.push(*subject);
            let (can_read, row_filter) = match read {
                0 => ("all", Value::Null),
                1 => ("own", Value::Null),
                2 => (
                    "filtered",
                    json!({"column": name_key(t), "op": "neq", "value": "secret"}),
                ),
                _ => ("none", Value::Null),
            };
            let can_edit = if can_read == "none" { "none" } else { "own" };
            rows.push(row("grant", format!("{tref}.g{subject}"), json!({"subject": subjects[*subject],
                "can_read": can_read, "can_insert": insert, "can_edit": can_edit, "row_filter": row_filter,
                "hidden_columns": [], "scope_values": []})));
        }
        if table.trigger {
            rows.push(row(
                "trigger",
                format!("{tref}.bump"),
                json!({"id": "bump", "name": "Bump", "on": "created",
                "actions": [{"type": "update_record", "values": {name_key(t): "set"}}]}),
            ));
        }
        if !table.views.is_empty() && table.formula {
            rows.push(row(
                "public_read_token",
                format!("{tref}.token"),
                json!({"view": format!("{tref}.v0"),
                "name": "board", "rpm": 30, "allow_query": table.lookup}),
            ));
        }
        if table.clients {
            rows.push(row("command", format!("{tref}.find"), json!({"name": "find", "command_kind": "query",
                "inputs": {"type": "object", "properties": {"n": {"type": "string"}}}, "authority": "caller",
                "query": {"filter": {"column": name_key(t), "op": "eq", "value": "$input.n"}}})));
        }
        rows.push(row(
            "client_access",
            format!("{tref}.clients"),
            json!({"enabled": table.clients}),
        ));
    }
    rows.iter().map(|r| format!("{r}\n")).collect()
}

/// A fresh company with the names the document's tokens use.
async fn company(app: &TestApp, case: usize) -> Seed {
    let company = format!("case{case}");
    Seed(
        app.apply(json!({"companies": [{"ref": company, "name": company,
            "departments": [{"ref": "rnd", "name": "R&D"}],
            "chatrooms": [{"ref": "lab", "name": "lab", "department": "rnd"}],
            "users": [{"ref": "boss", "username": "boss", "role": 3},
                      {"ref": "member", "username": "member", "role": 1, "departments": ["rnd"], "chatrooms": ["lab"]}],
            "api_keys": [],
            "social_clients": [{"ref": "line1", "platform": "line", "platform_user_id": "U1", "chatrooms": ["lab"]}]}]}))
        .await,
    )
}

async fn call(
    app: &TestApp,
    token: &str,
    method: Method,
    path: &str,
    body: Option<&str>,
) -> (u16, String) {
    let mut request = app.request(method, path).bearer_token(token);
    if let Some(body) = body {
        request = request
            .header("content-type", "application/x-ndjson")
            .body(body.to_string());
    }
    let response = request.send().await.unwrap();
    (response.status().as_u16(), response.text().await.unwrap())
}

async fn check(app: &TestApp, case: usize, tables: &[GenTable]) {
    let seed = company(app, case).await;
    let token = seed.token(&format!("case{case}"), "boss");
    let company_mount = format!("{BASE}/company");
    let department = format!(
        "{BASE}/department/{}",
        seed.department(&format!("case{case}"), "rnd")
    );
    let generated = document(tables);
    let (s, body) = call(
        app,
        &token,
        Method::POST,
        &format!("{company_mount}/tables/iac/apply?system=gen"),
        Some(&generated),
    )
    .await;
    assert_eq!(s, 200, "apply of\n{generated}\n{body}");
    let applied: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(
        applied["state"]["total"],
        generated.lines().count(),
        "{body}"
    );
    let (s, exported) = call(
        app,
        &token,
        Method::GET,
        &format!("{company_mount}/tables/iac/export?system=gen"),
        None,
    )
    .await;
    assert_eq!(s, 200);
    let schema: Value =
        serde_json::from_str(include_str!("../../../../docs/deployment-rows.schema.json")).unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    for line in exported.lines() {
        let row: Value = serde_json::from_str(line).unwrap();
        assert!(
            validator.is_valid(&row),
            "the published schema admits {row}"
        );
    }
    let (s, body) = call(
        app,
        &token,
        Method::POST,
        &format!("{department}/tables/iac/apply?system=gen"),
        Some(&exported),
    )
    .await;
    assert_eq!(s, 200, "apply of the export\n{exported}\n{body}");
    let (s, again) = call(
        app,
        &token,
        Method::GET,
        &format!("{department}/tables/iac/export?system=gen"),
        None,
    )
    .await;
    assert_eq!(s, 200);
    assert_eq!(again, exported, "export -> apply -> export is stable");
    for mount in [&company_mount, &department] {
        let (s, plan) = call(
            app,
            &token,
            Method::POST,
            &format!("{mount}/tables/iac/plan?system=gen"),
            Some(&exported),
        )
        .await;
        assert_eq!(s, 200);
        let plan: Value = serde_json::from_str(&plan).unwrap();
        assert_eq!(
            plan["changes"],
            json!([]),
            "plan after apply in {mount}: {plan}"
        );
        assert_eq!(plan["errors"], json!([]));
    }
    let (s, _) = read_json(
        app.request(Method::GET, &format!("{department}/tables"))
            .bearer_token(&token)
            .send()
            .await
            .unwrap(),
    )
    .await;
    assert_eq!(s, 200);
}

#[test]
fn generated_scopes_round_trip_through_export_and_apply() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let app = runtime.block_on(TestApp::spawn());
    let mut runner = TestRunner::new(Config {
        cases: std::env::var("DEPLOYMENT_CASES")
            .ok()
            .and_then(|n| n.parse().ok())
            .unwrap_or(12),
        max_shrink_iters: 32,
        failure_persistence: None,
        ..Config::default()
    });
    let case = std::sync::atomic::AtomicUsize::new(0);
    runner
        .run(&scope_strategy(), |tables| {
            let n = case.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            runtime.block_on(check(&app, n, &tables));
            Ok(())
        })
        .unwrap();
}
