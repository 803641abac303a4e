use super::*;
use crate::tables::column::ColumnType;
use proptest::prelude::*;

fn column(key: &str, name: &str, column_type: ColumnType) -> ColumnDef {
    ColumnDef::new(key, name, column_type)
}

fn columns() -> Vec<ColumnDef> {
    vec![
        column("col_1", "Price", ColumnType::Integer),
        column("col_2", "Rate", ColumnType::Float),
        column("col_3", "Paid", ColumnType::Boolean),
        column("col_4", "Title", ColumnType::String),
        column("col_5", "Doc", ColumnType::Json),
        column("col_6", "Due", ColumnType::Date),
    ]
}

fn build(expression: &str) -> Result<Formula, String> {
    Formula::build(expression, &columns(), &[])
}

#[test]
fn precedence_and_associativity_follow_arithmetic() {
    let f = build("1 + 2 * [Price] - 4 / 2").unwrap();
    assert_eq!(f.expr.render(&columns()), "(1 + (2 * [Price])) - (4 / 2)");
    assert_eq!(f.kind, Kind::Float);
    let f = build("-(1 - 2) - 3").unwrap();
    assert_eq!(f.expr.render(&columns()), "-(1 - 2) - 3");
    assert_eq!(f.kind, Kind::Integer);
    // Two minus signs cancel out instead of nesting.
    assert_eq!(
        build("--[Price]").unwrap().expr,
        build("[Price]").unwrap().expr
    );
}

#[test]
fn kinds_follow_the_operands() {
    assert_eq!(build("[Price] * 2").unwrap().kind, Kind::Integer);
    assert_eq!(build("[Price] * 1.5").unwrap().kind, Kind::Float);
    assert_eq!(build("[Price] >= [Rate]").unwrap().kind, Kind::Boolean);
    assert_eq!(build("IF([Paid], [Price], 0)").unwrap().kind, Kind::Integer);
    assert_eq!(build("IF([Paid], [Price], 0.5)").unwrap().kind, Kind::Float);
    assert_eq!(
        build("if([Paid], [Title], \"none\")").unwrap().kind,
        Kind::Text
    );
    assert_eq!(
        build("AND([Paid], OR(TRUE, [Price] > 1))").unwrap().kind,
        Kind::Boolean
    );
    assert_eq!(build("[Due] < [Due]").unwrap().kind, Kind::Boolean);
    assert_eq!(build("[col_1]").unwrap().kind, Kind::Integer);
}

#[test]
fn references_resolve_to_keys_and_render_with_current_names() {
    let f = build("[Price] + [col_2]").unwrap();
    assert_eq!(f.references(), vec!["col_1".to_string(), "col_2".into()]);
    let mut renamed = columns();
    renamed[0].name = "Cost".into();
    assert_eq!(f.expr.render(&renamed), "[Cost] + [Rate]");
    assert_eq!(dependents(&columns(), "col_1"), Vec::<String>::new());
}

#[test]
fn formulas_read_other_formulas_and_inherit_hiding() {
    let mut cols = columns();
    let mut double = column("col_7", "Double", ColumnType::Formula);
    double.formula = Some(Box::new(Formula::build("[Price] * 2", &cols, &[]).unwrap()));
    cols.push(double);
    let mut quad = column("col_8", "Quad", ColumnType::Formula);
    quad.formula = Some(Box::new(
        Formula::build("[Double] * 2", &cols, &[]).unwrap(),
    ));
    assert_eq!(quad.formula.as_ref().unwrap().references(), vec!["col_7"]);
    cols.push(quad);
    assert_eq!(dependents(&cols, "col_1"), vec!["Double".to_string()]);
    assert_eq!(
        with_dependents(&cols, vec!["col_1".into()]),
        vec!["col_1".to_string(), "col_7".into(), "col_8".into()]
    );
    assert_eq!(
        with_dependents(&cols, vec!["col_2".into()]),
        vec!["col_2".to_string()]
    );
}

#[test]
fn errors_name_the_problem() {
    let cases = [
        ("", "expression is required"),
        ("1 +", "syntax error at character"),
        ("[Nope] + 1", "Column 'Nope' does not exist"),
        ("[Link -> Amount]", "'Link' is not a link column"),
        ("[Doc] + 1", "json column, which formulas cannot read"),
        ("[Title] + 1", "`+` needs numbers, not text"),
        ("[Paid] < TRUE", "cannot compare"),
        ("[Price] == [Title]", "cannot compare"),
        ("IF([Price], 1, 2)", "condition of IF must be a boolean"),
        ("IF([Paid], 1, \"x\")", "branches of IF"),
        ("AND([Paid], 1)", "arguments of AND must be booleans"),
        ("IF([Paid], 1)", "syntax error"),
        ("1 < 2 < 3", "syntax error"),
        ("99999999999999999999", "syntax error"),
        ("-[Title]", "unary - needs numbers"),
    ];
    for (expression, expected) in cases {
        let error = build(expression).unwrap_err();
        assert!(error.contains(expected), "{expression}: {error}");
    }
}

#[test]
fn limits_are_checked_before_parsing() {
    let long = format!("1{}", " + 1".repeat(250));
    assert!(build(&long).unwrap_err().contains("at most 1000"));
    let deep = format!("{}1{}", "(".repeat(21), ")".repeat(21));
    assert!(build(&deep).unwrap_err().contains("nests 21 levels"));
    let ok = format!("{}1{}", "(".repeat(20), ")".repeat(20));
    assert!(build(&ok).is_ok());
    // Brackets and strings do not count as nesting.
    assert!(build("\"((((((((((((((((((((((\" == [Title]").is_ok());
    let refs = vec!["[Price]"; 21].join(" + ");
    assert!(build(&refs).unwrap_err().contains("21 times"));
    // A long chain is as deep as it is long: refused before it is stored.
    let chain = vec!["1"; 41].join(" + ");
    assert!(build(&chain).unwrap_err().contains("41 levels deep"));
    assert!(build(&vec!["1"; 40].join(" + ")).is_ok());
    // NUL never enters a stored string or a reference.
    assert!(
        build("\"a\u{0}b\" == [Title]")
            .unwrap_err()
            .contains("syntax error")
    );
    assert!(
        build("[Pri\u{0}ce] + 1")
            .unwrap_err()
            .contains("syntax error")
    );
}

proptest! {
    /// Any input gives a tree or an error, never a panic or a stack overflow.
    #[test]
    fn arbitrary_input_never_panics(input in "[-+*/<>=!(),\\[\\]\" 0-9.eE a-zA-Z_]{0,300}") {
        let _ = build(&input);
    }

    /// Rendering a tree and parsing it again gives the same tree.
    #[test]
    fn render_round_trips(a in -1000i64..1000, b in -1000i64..1000, x in -1e6f64..1e6) {
        let source = format!("IF([Paid], ({a} - [Price]) * {b}, [Rate] / {x:?}) >= -{a}");
        if let Ok(f) = build(&source) {
            let again = build(&f.expr.render(&columns())).unwrap();
            prop_assert_eq!(again.expr, f.expr);
        }
    }
}

/// A table with cardinality-one and many links to table `T` (columns Amount, a
/// float, and Title).
fn linked_tables() -> (Vec<ColumnDef>, Vec<OtherTable>) {
    let target = Uuid::from_u128(7);
    let mut one = column("col_7", "Customer", ColumnType::Link);
    one.target_table_id = Some(target);
    one.cardinality = Some(crate::tables::column::Cardinality::One);
    let mut many = column("col_8", "Items", ColumnType::Link);
    many.target_table_id = Some(target);
    let mut own = columns();
    own.extend([one, many]);
    let facts = crate::tables::column::LinkFacts {
        company_id: target,
        scope: crate::tables::scope::ScopeRef {
            kind: crate::tables::scope::ScopeKind::Company,
            id: target,
        },
    };
    let others = vec![OtherTable {
        id: target,
        facts,
        columns: vec![
            column("col_a", "Amount", ColumnType::Float),
            column("col_b", "Title", ColumnType::String),
        ],
    }];
    (own, others)
}

#[test]
fn cross_table_references_read_a_number_through_a_one_link() {
    let (own, others) = linked_tables();
    let f = Formula::build("[Price] * [Customer -> Amount]", &own, &others).unwrap();
    assert_eq!(f.kind, Kind::Float);
    assert_eq!(f.expr.render(&own), "[Price] * [Customer -> col_a]");
    assert_eq!(
        f.references(),
        vec!["col_1".to_string(), "col_7".to_string()]
    );
    assert_eq!(
        f.linked(),
        vec![(Uuid::from_u128(7), "col_a".to_string(), ColumnType::Float)]
    );
    // The rendered form builds the same tree (the target named by key).
    let again = Formula::build(&f.expr.render(&own), &own, &others).unwrap();
    assert_eq!(again, f);
    for (expression, expected) in [
        ("[Items -> Amount]", "must be a cardinality-one link"),
        (
            "[Customer -> Title]",
            "cross-table references read integer and float",
        ),
        (
            "[Customer -> Nope]",
            "'Nope' is not a column of the linked table",
        ),
        ("[Price -> Amount]", "'Price' is not a link column"),
    ] {
        let error = Formula::build(expression, &own, &others).unwrap_err();
        assert!(error.contains(expected), "{expression}: {error}");
    }
    let error = Formula::build("[Customer -> Amount]", &own, &[]).unwrap_err();
    assert!(error.contains("linked table does not exist"), "{error}");
}
