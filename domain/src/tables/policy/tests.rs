use super::*;
use crate::tables::column::ColumnType;
use serde_json::json;

fn column(key: &str, t: ColumnType, target: Option<Uuid>) -> ColumnDef {
    ColumnDef {
        target_table_id: target,
        ..ColumnDef::new(key, key.trim_start_matches("col_"), t)
    }
}

const TARGET: Uuid = Uuid::from_u128(7);

fn columns() -> Vec<ColumnDef> {
    vec![
        column("col_n", ColumnType::Integer, None),
        column("col_s", ColumnType::String, None),
        column("col_d", ColumnType::Date, None),
        column("col_p", ColumnType::Principal, None),
        column("col_m", ColumnType::MultiSelect, None),
        column("col_l", ColumnType::Link, Some(TARGET)),
    ]
}

fn targets() -> Targets {
    [(TARGET, vec![column("col_t", ColumnType::Integer, None)])].into()
}

fn author(node: serde_json::Value) -> Result<Condition, TableError> {
    compile(&node, &columns(), &targets(), Mode::Author)
}

fn tokens(me: Option<Vec<String>>) -> Tokens {
    Tokens {
        today: NaiveDate::from_ymd_opt(2026, 11, 26).unwrap(),
        now: "2026-11-26T10:00:00Z".parse().unwrap(),
        me,
        me_department: None,
    }
}

fn read(node: serde_json::Value, tokens: &Tokens) -> Condition {
    compile(&node, &columns(), &targets(), Mode::Read(tokens)).unwrap()
}

#[test]
fn predicates_name_stored_scalar_columns_by_internal_key() {
    assert!(author(json!({"column": "col_n", "op": "gt", "value": 3})).is_ok());
    assert!(
        author(json!({"column": "n", "op": "gt", "value": 3})).is_err(),
        "display name"
    );
    assert!(
        author(json!({"column": "col_m", "op": "contains", "value": "a"})).is_err(),
        "list"
    );
    assert!(author(json!({"column": "col_s", "op": "name_eq", "value": "a"})).is_err());
    assert!(author(json!({"column": "col_n", "op": "is_null", "value": 1})).is_err());
    assert!(author(json!({"column": "col_n", "op": "eq"})).is_err());
    assert!(author(json!({"column": "col_n", "op": "eq", "value": 1, "x": 1})).is_err());
    assert!(author(json!({"and": []})).is_err(), "groups are non-empty");
    let err = author(json!({"and": [{"column": "col_n", "op": "gt", "value": "x"}]})).unwrap_err();
    assert!(err.to_string().contains("$.and[0]"), "{err}");
}

#[test]
fn caps_bind_authored_policies() {
    let deep =
        json!({"not": {"not": {"not": {"not": {"not": {"column": "col_n", "op": "is_null"}}}}}});
    assert!(author(deep).is_err(), "depth 6");
    let ok = json!({"not": {"not": {"not": {"not": {"column": "col_n", "op": "is_null"}}}}});
    assert!(author(ok).is_ok(), "depth 5");
    let many: Vec<_> = (0..25)
        .map(|i| json!({"column": "col_n", "op": "eq", "value": i}))
        .collect();
    assert!(author(json!({"or": many[..24]})).is_ok());
    assert!(author(json!({"or": many})).is_err(), "25 predicates");
    let list: Vec<i64> = (0..101).collect();
    assert!(author(json!({"column": "col_n", "op": "in", "value": list})).is_err());
    let link = json!({"link": "col_l", "quantifier": "any", "target": {"column": "col_t", "op": "gt", "value": 1}});
    assert!(author(json!({"or": vec![link.clone(); 6]})).is_ok());
    assert!(
        author(json!({"or": vec![link; 7]})).is_err(),
        "7 link leaves"
    );
}

#[test]
fn link_leaves_state_require_present_only_on_all() {
    let target = json!({"column": "col_t", "op": "gt", "value": 1});
    assert!(author(json!({"link": "col_l", "quantifier": "all", "target": target})).is_err());
    assert!(
        author(
            json!({"link": "col_l", "quantifier": "all", "require_present": true, "target": target})
        )
        .is_ok()
    );
    assert!(
        author(
            json!({"link": "col_l", "quantifier": "any", "require_present": true, "target": target})
        )
        .is_err()
    );
    assert!(
        author(json!({"link": "col_l", "op": "contains", "value": "x"})).is_err(),
        "membership leaf"
    );
    assert!(author(json!({"link": "col_n", "quantifier": "any", "target": target})).is_err());
}

#[test]
fn date_tokens_resolve_relative_to_today() {
    let t = tokens(None);
    let got = read(
        json!({"column": "col_d", "op": "gte", "value": "$today-3d"}),
        &t,
    );
    let Condition::Test { operands, .. } = got else {
        panic!("{got:?}")
    };
    assert_eq!(operands, vec![json!("2026-11-23")]);
    assert!(author(json!({"column": "col_d", "op": "eq", "value": "$today+2x"})).is_err());
    assert!(author(json!({"column": "col_n", "op": "eq", "value": "$today"})).is_err());
    assert!(author(json!({"column": "col_d", "op": "eq", "value": "$now"})).is_err());
}

#[test]
fn principal_sets_fail_closed() {
    let me = json!({"column": "col_p", "op": "eq", "value": "$me"});
    assert_eq!(read(me.clone(), &tokens(None)), Condition::Const(None));
    assert_eq!(
        read(me.clone(), &tokens(Some(vec![]))),
        Condition::Const(None)
    );
    let huge: Vec<String> = (0..1001)
        .map(|i| format!("user:{}", Uuid::from_u128(i)))
        .collect();
    assert_eq!(
        read(me.clone(), &tokens(Some(huge))),
        Condition::Const(None)
    );
    let mine = vec![format!("user:{}", Uuid::from_u128(1))];
    let got = read(me, &tokens(Some(mine)));
    assert!(matches!(got, Condition::Test { op: Op::In, .. }), "{got:?}");
    let neq = read(
        json!({"column": "col_p", "op": "neq", "value": "$me"}),
        &tokens(Some(vec!["user:x".into()])),
    );
    assert!(
        matches!(neq, Condition::And(_)),
        "neq excludes blanks: {neq:?}"
    );
    assert!(author(json!({"column": "col_s", "op": "eq", "value": "$me"})).is_err());
}

#[test]
fn unresolvable_nodes_narrow_in_place() {
    let t = tokens(None);
    let got = read(
        json!({"or": [{"column": "col_gone", "op": "eq", "value": 1}, {"column": "col_n", "op": "eq", "value": 1}]}),
        &t,
    );
    let Condition::Or(items) = got else {
        panic!("{got:?}")
    };
    assert_eq!(items[0], Condition::Const(None));
    let link = read(
        json!({"link": "col_l", "quantifier": "any", "target": {"column": "col_gone", "op": "is_null"}}),
        &t,
    );
    assert_eq!(
        link,
        Condition::Const(None),
        "a link leaf with an unknown target is unknown"
    );
    assert_eq!(read(json!("garbage"), &t), Condition::Const(None));
}
