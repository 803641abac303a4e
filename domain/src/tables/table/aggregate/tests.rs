use super::*;
use crate::tables::column::{ColumnChanges, ColumnSpec, ColumnType};
use crate::tables::scope::ScopeKind;
use cqrs_es::test::TestFramework;
use serde_json::json;

const TABLE: Uuid = Uuid::from_u128(10);
const COMPANY: Uuid = Uuid::from_u128(1);
const MIGRATION: Uuid = Uuid::from_u128(99);

fn created() -> TableEvent {
    TableEvent::TableCreated {
        table_id: TABLE,
        company_id: COMPANY,
        scope: ScopeRef {
            kind: ScopeKind::Company,
            id: COMPANY,
        },
        name: "T".into(),
        description: None,
        created_by: "user:x".into(),
    }
}

fn spec(name: &str, t: ColumnType) -> ColumnSpec {
    ColumnSpec {
        name: name.into(),
        column_type: Some(t),
        ..Default::default()
    }
}

fn add(spec: ColumnSpec, live_records: i64) -> TableCommand {
    TableCommand::AddColumn {
        key: "col_a1".into(),
        spec,
        room_department: None,
        link: None,
        link_targets: Vec::new(),
        others: Vec::new(),
        live_records,
        migration_id: MIGRATION,
    }
}

fn added(t: ColumnType) -> TableEvent {
    let placement = Placement {
        company_id: COMPANY,
        scope: ScopeRef {
            kind: ScopeKind::Company,
            id: COMPANY,
        },
        room_department: None,
    };
    let around = column::Surroundings {
        existing: &[],
        table_id: TABLE,
        placement: &placement,
        link: None,
        link_targets: &[],
        others: &[],
    };
    let column = column::build_column("col_b2".into(), spec("B", t), &around).unwrap();
    TableEvent::ColumnAdded {
        table_id: TABLE,
        column,
        fill: None,
        migration: None,
    }
}

fn result(given: Vec<TableEvent>, command: TableCommand) -> Result<Vec<TableEvent>, TableError> {
    TestFramework::<CustomTable>::with(())
        .given(given)
        .when(command)
        .inspect_result()
}

#[test]
fn required_column_on_a_non_empty_table_needs_a_default() {
    let mut s = spec("A", ColumnType::Integer);
    s.required = Some(true);
    assert_eq!(
        result(vec![created()], add(s.clone(), 3)),
        Err(TableError::DefaultNeeded(3))
    );
    s.default_value = Some(json!(7));
    let events = result(vec![created()], add(s, 3)).unwrap();
    let TableEvent::ColumnAdded {
        fill, migration, ..
    } = &events[0]
    else {
        panic!()
    };
    assert_eq!(fill, &Some(json!(7)));
    assert!(!migration.as_ref().unwrap().background);
}

#[test]
fn computed_columns_refuse_required_and_default() {
    let mut s = spec("F", ColumnType::Formula);
    s.required = Some(false);
    assert!(matches!(
        result(vec![created()], add(s, 0)),
        Err(TableError::ColumnConfig(_))
    ));
    let f = spec("F", ColumnType::Formula);
    assert_eq!(
        result(vec![created()], add(f, 0)),
        Err(TableError::config(
            "expression is required for formula columns"
        ))
    );
    let r = spec("R", ColumnType::Rollup);
    assert_eq!(
        result(vec![created()], add(r, 0)),
        Err(TableError::config(
            "link_field is required for outgoing rollups and lookups"
        ))
    );
}

#[test]
fn a_background_migration_locks_the_schema_until_completed() {
    let change = TableCommand::UpdateColumn {
        key: "col_b2".into(),
        changes: ColumnChanges {
            column_type: Some(ColumnType::String),
            ..Default::default()
        },
        live_records: BACKGROUND_THRESHOLD + 1,
        option_usage: 0,
        empty_cells: 0,
        migration_id: MIGRATION,
    };
    let events = result(vec![created(), added(ColumnType::Integer)], change).unwrap();
    let TableEvent::ColumnTypeChanged { migration, .. } = &events[0] else {
        panic!()
    };
    assert!(migration.background);
    let mut given = vec![created(), added(ColumnType::Integer)];
    given.extend(events);
    assert_eq!(
        result(given.clone(), add(spec("C", ColumnType::Text), 0)),
        Err(TableError::MigrationInProgress(MIGRATION))
    );
    let done = result(
        given.clone(),
        TableCommand::CompleteMigration {
            migration_id: MIGRATION,
        },
    )
    .unwrap();
    given.extend(done);
    assert!(result(given, add(spec("C", ColumnType::Text), 0)).is_ok());
}

#[test]
fn removing_a_used_option_conflicts_with_its_count() {
    let mut s = spec("S", ColumnType::Select);
    s.options = Some(vec!["a".into(), "b".into()]);
    let events = result(vec![created()], add(s, 0)).unwrap();
    let mut given = vec![created()];
    given.extend(events);
    let change = TableCommand::UpdateColumn {
        key: "col_a1".into(),
        changes: ColumnChanges {
            options: Some(vec!["a".into()]),
            ..Default::default()
        },
        live_records: 4,
        option_usage: 2,
        empty_cells: 0,
        migration_id: MIGRATION,
    };
    assert_eq!(
        result(given, change),
        Err(TableError::OptionInUse {
            options: vec!["b".into()],
            count: 2
        })
    );
}

#[test]
fn names_are_unique_and_not_reserved() {
    let given = vec![created(), added(ColumnType::Integer)];
    assert_eq!(
        result(given.clone(), add(spec("b", ColumnType::Text), 0)),
        Err(TableError::DuplicateName("b".into()))
    );
    assert_eq!(
        result(given.clone(), add(spec("created_at", ColumnType::Text), 0)),
        Err(TableError::ReservedName("created_at".into()))
    );
    assert!(result(given, add(spec("名前", ColumnType::Text), 0)).is_ok());
}

#[test]
fn a_column_becomes_required_only_when_no_live_record_leaves_it_empty() {
    let events = result(vec![created()], add(spec("S", ColumnType::String), 0)).unwrap();
    let mut given = vec![created()];
    given.extend(events);
    let require = |empty_cells| TableCommand::UpdateColumn {
        key: "col_a1".into(),
        changes: ColumnChanges {
            required: Some(true),
            ..Default::default()
        },
        live_records: 4,
        option_usage: 0,
        empty_cells,
        migration_id: MIGRATION,
    };
    assert_eq!(
        result(given.clone(), require(3)),
        Err(TableError::RequiredButEmpty(3))
    );
    assert!(result(given, require(0)).is_ok());
}

#[test]
fn a_column_a_view_uses_cannot_be_deleted() {
    let view =
        |filter, sort: Vec<crate::tables::table::SortKey>, columns| TableEvent::ViewCreated {
            table_id: TABLE,
            view: crate::tables::table::ViewDef {
                id: Uuid::new_v4(),
                name: "open".into(),
                filter,
                sort,
                columns,
            },
        };
    let delete = || TableCommand::DeleteColumn {
        key: "col_b2".into(),
    };
    let sorted = vec![crate::tables::table::SortKey {
        column: "col_b2".into(),
        order: "asc".into(),
    }];
    for used in [
        view(
            Some(json!({"and": [{"column": "col_b2", "op": "eq", "value": 1}]})),
            vec![],
            None,
        ),
        view(None, sorted, None),
        view(None, vec![], Some(vec!["col_b2".to_string()])),
    ] {
        assert_eq!(
            result(vec![created(), added(ColumnType::Integer), used], delete()),
            Err(TableError::ColumnInView(vec!["open".into()]))
        );
    }
    let unrelated = view(
        Some(json!({"column": "id", "op": "eq", "value": "x"})),
        vec![],
        None,
    );
    assert!(
        result(
            vec![created(), added(ColumnType::Integer), unrelated],
            delete()
        )
        .is_ok()
    );
}
