//! Property: a row policy compiled to SQL selects exactly the rows a direct
//! evaluation of the same policy admits, over random policies (every operator,
//! groups, `not`, link leaves with both quantifiers, tokens, unresolvable nodes) and
//! random rows with empty cells; and an unresolvable node never widens the rows.

use chrono::{Days, NaiveDate};
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::policy::{self, Mode, Targets, Tokens};
use domain::tables::query::{Condition, Field, Op, Quantifier};
use projections::read_models::tables::read::{Selection, TableHandle};
use projections::read_models::tables::table_name;
use projections::testing::TestDatabase;
use proptest::prelude::*;
use proptest::test_runner::{Config, TestRunner};
use serde_json::{Value, json};
use sqlx::PgPool;
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

const COMPANY: Uuid = Uuid::from_u128(1);
const MAIN: Uuid = Uuid::from_u128(0x100);
const TARGET: Uuid = Uuid::from_u128(0x200);
const ME: &str = "user:00000000-0000-0000-0000-0000000000aa";
const PRINCIPALS: [&str; 3] = [
    ME,
    "user:00000000-0000-0000-0000-0000000000bb",
    "room:00000000-0000-0000-0000-0000000000cc",
];
const WORDS: [&str; 5] = ["a", "ab", "abc", "b", "bc"];
const TARGET_ROWS: usize = 5;

fn today() -> NaiveDate {
    NaiveDate::from_ymd_opt(2026, 11, 26).unwrap()
}

fn column(key: &str, t: ColumnType, target: Option<Uuid>) -> ColumnDef {
    ColumnDef {
        target_table_id: target,
        ..ColumnDef::new(key, key, t)
    }
}

fn main_columns() -> Vec<ColumnDef> {
    vec![
        column("col_1", ColumnType::Integer, None),
        column("col_2", ColumnType::String, None),
        column("col_3", ColumnType::Boolean, None),
        column("col_4", ColumnType::Date, None),
        column("col_5", ColumnType::Principal, None),
        column("col_6", ColumnType::Link, Some(TARGET)),
    ]
}

fn target_columns() -> Vec<ColumnDef> {
    vec![
        column("col_7", ColumnType::Integer, None),
        column("col_8", ColumnType::String, None),
    ]
}

/// Cells by column key (`null` for an empty cell).
type Row = BTreeMap<String, Value>;

fn main_row() -> impl Strategy<Value = Row> {
    (
        proptest::option::of(-2i64..3),
        proptest::option::of(proptest::sample::select(WORDS.to_vec())),
        proptest::option::of(any::<bool>()),
        proptest::option::of(0u64..5),
        proptest::option::of(proptest::sample::select(PRINCIPALS.to_vec())),
        proptest::option::of(proptest::collection::vec(0usize..TARGET_ROWS + 1, 0..3)),
    )
        .prop_map(|(n, s, b, d, p, l)| {
            let day = d.map(|d| (today() - Days::new(2) + Days::new(d)).to_string());
            // Index TARGET_ROWS is a dangling link (no such target record).
            let links = l.map(|ids| ids.into_iter().map(target_id).collect::<Vec<_>>());
            [
                ("col_1", json!(n)),
                ("col_2", json!(s)),
                ("col_3", json!(b)),
                ("col_4", json!(day)),
                ("col_5", json!(p)),
                ("col_6", json!(links)),
            ]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect()
        })
}

fn target_id(i: usize) -> Uuid {
    Uuid::from_u128(0x9000 + i as u128)
}

fn target_row() -> impl Strategy<Value = Row> {
    (
        proptest::option::of(-2i64..3),
        proptest::option::of(proptest::sample::select(WORDS.to_vec())),
    )
        .prop_map(|(t, u)| {
            [("col_7", json!(t)), ("col_8", json!(u))]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect()
        })
}

/// A predicate on a main-table column (some deliberately unresolvable).
fn main_predicate() -> impl Strategy<Value = Value> {
    let ops = [
        "eq",
        "neq",
        "gt",
        "gte",
        "lt",
        "lte",
        "in",
        "contains",
        "is_null",
        "is_not_null",
    ];
    (
        proptest::sample::select(vec!["col_1", "col_2", "col_3", "col_4", "col_5", "col_ff"]),
        proptest::sample::select(ops.to_vec()),
        0usize..8,
    )
        .prop_map(|(column, op, pick)| predicate(column, op, pick))
}

fn target_predicate() -> impl Strategy<Value = Value> {
    let ops = [
        "eq",
        "neq",
        "gt",
        "lt",
        "in",
        "contains",
        "is_null",
        "is_not_null",
    ];
    (
        proptest::sample::select(vec!["col_7", "col_8"]),
        proptest::sample::select(ops.to_vec()),
        0usize..8,
    )
        .prop_map(|(column, op, pick)| predicate(column, op, pick))
}

/// An operand of a column's type, a token, or (rarely) a value that does not fit.
fn operand(column: &str, pick: usize) -> Value {
    match column {
        "col_1" | "col_7" => json!(pick as i64 - 3),
        "col_2" | "col_8" => json!(WORDS[pick % WORDS.len()]),
        "col_3" => json!(pick.is_multiple_of(2)),
        "col_4" => match pick {
            0 => json!("$today"),
            1 => json!("$today-1d"),
            2 => json!("$today+1d"),
            3 => json!("$now"),
            n => json!((today() - Days::new(2) + Days::new(n as u64 - 4)).to_string()),
        },
        "col_5" => match pick {
            0 | 1 => json!("$me"),
            2 => json!("$me.department"),
            n => json!(PRINCIPALS[n % PRINCIPALS.len()]),
        },
        _ => json!(pick),
    }
}

fn predicate(column: &str, op: &str, pick: usize) -> Value {
    match op {
        "is_null" | "is_not_null" => json!({"column": column, "op": op}),
        "in" => {
            json!({"column": column, "op": op, "value": [operand(column, pick), operand(column, pick + 3)]})
        }
        _ => json!({"column": column, "op": op, "value": operand(column, pick)}),
    }
}

fn tree(leaf: BoxedStrategy<Value>, depth: u32) -> BoxedStrategy<Value> {
    leaf.prop_recursive(depth, 16, 3, |inner| {
        prop_oneof![
            proptest::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({"and": v})),
            proptest::collection::vec(inner.clone(), 1..4).prop_map(|v| json!({"or": v})),
            inner.prop_map(|v| json!({"not": v})),
        ]
    })
    .boxed()
}

fn policy_strategy() -> impl Strategy<Value = Value> {
    let link = (
        tree(target_predicate().boxed(), 1),
        prop_oneof![Just("any"), Just("all")],
        any::<bool>(),
    )
        .prop_map(|(target, quantifier, present)| {
            if quantifier == "any" {
                json!({"link": "col_6", "quantifier": "any", "target": target})
            } else {
                json!({"link": "col_6", "quantifier": "all", "require_present": present, "target": target})
            }
        });
    tree(prop_oneof![4 => main_predicate(), 1 => link].boxed(), 3)
}

/// SQL's three-valued logic over the compiled condition, evaluated directly.
fn eval(c: &Condition, row: &Row, targets: &BTreeMap<Uuid, Row>) -> Option<bool> {
    match c {
        Condition::Const(v) => *v,
        Condition::And(items) => {
            let values: Vec<Option<bool>> = items.iter().map(|i| eval(i, row, targets)).collect();
            if values.contains(&Some(false)) {
                Some(false)
            } else if values.contains(&None) {
                None
            } else {
                Some(true)
            }
        }
        Condition::Or(items) => {
            let values: Vec<Option<bool>> = items.iter().map(|i| eval(i, row, targets)).collect();
            if values.contains(&Some(true)) {
                Some(true)
            } else if values.contains(&None) {
                None
            } else {
                Some(false)
            }
        }
        Condition::Not(inner) => eval(inner, row, targets).map(|b| !b),
        Condition::IsTrue(inner) => Some(eval(inner, row, targets) == Some(true)),
        Condition::Test {
            field,
            op,
            operands,
        } => Some(test(field, *op, operands, row)),
        Condition::Link {
            column,
            quantifier,
            require_present,
            target,
            ..
        } => {
            let ids: Vec<Uuid> = row[column]
                .as_array()
                .map(|a| {
                    a.iter()
                        .map(|v| v.as_str().unwrap().parse().unwrap())
                        .collect()
                })
                .unwrap_or_default();
            let matches = |id: &Uuid| {
                targets
                    .get(id)
                    .is_some_and(|t| eval(target, t, targets) == Some(true))
            };
            Some(match quantifier {
                Quantifier::Any => ids.iter().any(matches),
                Quantifier::All => {
                    ids.iter().all(matches)
                        && (!require_present || ids.iter().any(|id| targets.contains_key(id)))
                }
            })
        }
    }
}

/// A predicate: an empty cell fails every value operator and matches `is_null`.
fn test(field: &Field, op: Op, operands: &[Value], row: &Row) -> bool {
    let Field::Column(column) = field else {
        panic!("policies test columns only")
    };
    let cell = &row[&column.key];
    match op {
        Op::IsNull => return cell.is_null(),
        Op::IsNotNull => return !cell.is_null(),
        _ if cell.is_null() => return false,
        _ => {}
    }
    let order = |a: &Value, b: &Value| match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_i64().cmp(&y.as_i64()),
        (Value::Bool(x), Value::Bool(y)) => x.cmp(y),
        (Value::String(x), Value::String(y)) => x.cmp(y),
        _ => panic!("operands of different types: {a} {b}"),
    };
    let first = &operands[0];
    match op {
        Op::Eq => order(cell, first).is_eq(),
        Op::Neq => order(cell, first).is_ne(),
        Op::Gt => order(cell, first).is_gt(),
        Op::Gte => order(cell, first).is_ge(),
        Op::Lt => order(cell, first).is_lt(),
        Op::Lte => order(cell, first).is_le(),
        Op::In => operands.iter().any(|o| order(cell, o).is_eq()),
        Op::Contains => cell
            .as_str()
            .unwrap()
            .to_lowercase()
            .contains(&first.as_str().unwrap().to_lowercase()),
        _ => unreachable!("{op:?} is not a row-policy operator"),
    }
}

/// Replaces every unknown node by a constant.
fn resolve_unknown(c: &Condition, with: bool) -> Condition {
    match c {
        Condition::Const(None) => Condition::Const(Some(with)),
        Condition::And(items) => {
            Condition::And(items.iter().map(|i| resolve_unknown(i, with)).collect())
        }
        Condition::Or(items) => {
            Condition::Or(items.iter().map(|i| resolve_unknown(i, with)).collect())
        }
        Condition::Not(inner) => Condition::Not(Box::new(resolve_unknown(inner, with))),
        other => other.clone(),
    }
}

async fn create(pool: &PgPool, table: Uuid, columns: &[ColumnDef]) {
    let mut ddl = format!(
        "CREATE TABLE {} (id uuid PRIMARY KEY, created_at timestamptz NOT NULL DEFAULT now(),
         updated_at timestamptz NOT NULL DEFAULT now(), created_by text NOT NULL DEFAULT 'user:x'",
        table_name(table)
    );
    for c in columns {
        let t = match c.column_type {
            ColumnType::Integer => "bigint",
            ColumnType::Boolean => "boolean",
            ColumnType::Date => "date",
            ColumnType::Link => "uuid[]",
            _ => "text",
        };
        ddl.push_str(&format!(", {} {t}", c.key));
    }
    ddl.push(')');
    sqlx::query(&ddl).execute(pool).await.unwrap();
}

/// Replaces a table's rows (ids given) through `jsonb_populate_record`.
async fn fill(pool: &PgPool, table: Uuid, rows: &[(Uuid, Row)]) {
    let name = table_name(table);
    sqlx::query(&format!("TRUNCATE {name}"))
        .execute(pool)
        .await
        .unwrap();
    for (id, row) in rows {
        let mut record = serde_json::Map::new();
        record.insert("id".into(), json!(id));
        for (k, v) in row {
            record.insert(k.clone(), v.clone());
        }
        sqlx::query(&format!(
            "INSERT INTO {name} SELECT * FROM jsonb_populate_record(NULL::{name}, $1 || jsonb_build_object('created_at', now(), 'updated_at', now(), 'created_by', 'user:x'))"
        ))
        .bind(Value::Object(record))
        .execute(pool)
        .await
        .unwrap();
    }
}

#[test]
fn compiled_policies_select_what_direct_evaluation_admits() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let db = runtime.block_on(TestDatabase::fresh());
    runtime.block_on(create(&db.pool, MAIN, &main_columns()));
    runtime.block_on(create(&db.pool, TARGET, &target_columns()));
    let targets: Targets = [(TARGET, target_columns())].into();
    let tokens = Tokens {
        today: today(),
        now: "2026-11-26T12:00:00Z".parse().unwrap(),
        me: Some(vec![ME.to_string(), PRINCIPALS[2].to_string()]),
        me_department: None,
    };
    let handle = TableHandle {
        company_id: COMPANY,
        table_id: MAIN,
        columns: main_columns(),
        gates: Vec::new(),
    };
    let strategy = (
        policy_strategy(),
        proptest::collection::vec(main_row(), 0..14),
        proptest::collection::vec(target_row(), TARGET_ROWS),
    );
    let mut runner = TestRunner::new(Config {
        cases: 400,
        ..Config::default()
    });
    runner
        .run(&strategy, |(policy, rows, target_rows)| {
            let condition =
                policy::compile(&policy, &main_columns(), &targets, Mode::Read(&tokens)).unwrap();
            let rows: Vec<(Uuid, Row)> = rows
                .into_iter()
                .enumerate()
                .map(|(i, r)| (Uuid::from_u128(0x1000 + i as u128), r))
                .collect();
            let target_rows: Vec<(Uuid, Row)> = target_rows
                .into_iter()
                .enumerate()
                .map(|(i, r)| (target_id(i), r))
                .collect();
            let by_id: BTreeMap<Uuid, Row> = target_rows.iter().cloned().collect();
            let selected: BTreeSet<Uuid> = runtime.block_on(async {
                fill(&db.pool, MAIN, &rows).await;
                fill(&db.pool, TARGET, &target_rows).await;
                let selection = Selection {
                    access: Some(condition.clone()),
                    ..Default::default()
                };
                handle
                    .page(&db.pool, &selection)
                    .await
                    .unwrap()
                    .into_iter()
                    .map(|r| r.id)
                    .collect()
            });
            let admitted = |c: &Condition| -> BTreeSet<Uuid> {
                rows.iter()
                    .filter(|(_, row)| eval(c, row, &by_id) == Some(true))
                    .map(|(id, _)| *id)
                    .collect()
            };
            let expected = admitted(&condition);
            prop_assert_eq!(
                &selected,
                &expected,
                "policy {} compiled to {:?}",
                policy,
                condition
            );
            for with in [false, true] {
                let resolved = admitted(&resolve_unknown(&condition, with));
                prop_assert!(
                    expected.is_subset(&resolved),
                    "unknown widened {} (as {})",
                    policy,
                    with
                );
            }
            Ok(())
        })
        .unwrap();
}
