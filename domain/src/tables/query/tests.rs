use super::*;
use crate::tables::column::Cardinality;
use serde_json::json;

fn column(key: &str, name: &str, t: ColumnType) -> ColumnDef {
    ColumnDef {
        target_table_id: Some(uuid::Uuid::nil()),
        cardinality: Some(Cardinality::Many),
        ..ColumnDef::new(key, name, t)
    }
}

fn columns() -> Vec<ColumnDef> {
    vec![
        column("col_1", "Title", ColumnType::String),
        column("col_2", "Owner", ColumnType::Principal),
        column("col_3", "Count", ColumnType::Integer),
        column("col_4", "Who", ColumnType::User),
    ]
}

#[test]
fn trees_resolve_by_name_or_key() {
    let filter = json!({"and": [{"column": "Title", "op": "contains", "value": "x"},
                                {"not": {"column": "col_3", "op": "eq", "value": 3}}]});
    let resolved = resolve_filter(&filter, &columns()).unwrap();
    assert!(matches!(resolved, Condition::And(ref items) if items.len() == 2));
}

#[test]
fn principal_rules() {
    let id = uuid::Uuid::from_u128(1);
    let tagged = json!({"column": "Owner", "op": "eq", "value": format!("user:{id}")});
    assert!(resolve_filter(&tagged, &columns()).is_ok());
    let untagged = json!({"column": "Owner", "op": "eq", "value": id.to_string()});
    assert!(resolve_filter(&untagged, &columns()).is_err());
    let by_name = json!({"column": "Owner", "op": "name_eq", "value": "bob"});
    assert!(resolve_filter(&by_name, &columns()).is_err());
    let user_by_name = json!({"column": "Who", "op": "name_contains", "value": "bo"});
    assert!(resolve_filter(&user_by_name, &columns()).is_ok());
    assert!(sort_field(&columns(), "Owner").is_err());
    assert!(sort_field(&columns(), "Count").is_ok());
    assert!(group_field(&columns(), "Owner").is_ok());
}

#[test]
fn caps_and_shapes() {
    let leaf = json!({"column": "Count", "op": "eq", "value": 1});
    let mut deep = leaf.clone();
    for _ in 0..5 {
        deep = json!({"not": deep});
    }
    assert!(resolve_filter(&deep, &columns()).is_err(), "depth 6");
    let many = json!({"or": vec![leaf.clone(); 25]});
    assert!(resolve_filter(&many, &columns()).is_err(), "25 predicates");
    let big_in = json!({"column": "Count", "op": "in", "value": (0..101).collect::<Vec<_>>()});
    assert!(resolve_filter(&big_in, &columns()).is_err());
    assert!(resolve_filter(&json!({"and": []}), &columns()).is_err());
    assert!(resolve_filter(&json!({"and": [leaf.clone()], "or": [leaf]}), &columns()).is_err());
    assert!(
        resolve_filter(
            &json!({"column": "Nope", "op": "eq", "value": 1}),
            &columns()
        )
        .is_err()
    );
}
