use super::*;

fn column(t: ColumnType) -> ColumnDef {
    ColumnDef {
        options: Some(vec!["a".into(), "b".into()]),
        allowed_mime_types: Some(vec!["image/*".into()]),
        max_count: Some(1),
        max_file_bytes: Some(10),
        target_table_id: Some(Uuid::nil()),
        cardinality: Some(Cardinality::One),
        ..ColumnDef::new("col_1", "c", t)
    }
}

fn ok(t: ColumnType, v: Value) -> Value {
    normalize(&column(t), &v, &mut Vec::new()).unwrap_or_else(|e| panic!("{t:?} {v}: {e}"))
}

fn bad(t: ColumnType, v: Value) {
    assert!(
        normalize(&column(t), &v, &mut Vec::new()).is_err(),
        "{t:?} accepted {v}"
    );
}

#[test]
fn scalars() {
    use ColumnType as T;
    assert_eq!(ok(T::Integer, json!(5)), json!(5));
    bad(T::Integer, json!(5.5));
    bad(T::Integer, json!("5"));
    assert_eq!(ok(T::Float, json!(2)), json!(2.0));
    bad(T::Boolean, json!("true"));
    assert_eq!(ok(T::Date, json!("2024-02-29")), json!("2024-02-29"));
    bad(T::Date, json!("2023-02-29"));
    bad(T::Date, json!("2024-2-9"));
    assert_eq!(
        ok(T::Datetime, json!("2026-01-02T12:00:00.1234567+02:00")),
        json!("2026-01-02T10:00:00.123456Z")
    );
    bad(T::Datetime, json!("2026-01-02 12:00"));
    assert_eq!(ok(T::Select, json!("a")), json!("a"));
    bad(T::Select, json!("z"));
    assert_eq!(ok(T::MultiSelect, json!([])), Value::Null);
    bad(T::MultiSelect, json!(["a", "a"]));
    bad(T::String, json!("nul\u{0}"));
}

#[test]
fn people_and_links() {
    use ColumnType as T;
    let id = Uuid::from_u128(7);
    let mut refs = Vec::new();
    let v = normalize(
        &column(T::Principal),
        &json!(format!("room:{id}")),
        &mut refs,
    )
    .unwrap();
    assert_eq!(v, json!(format!("room:{id}")));
    assert_eq!(refs, vec![Reference::Room(id)]);
    bad(T::Principal, json!(id.to_string()));
    bad(T::Principal, json!([format!("user:{id}")]));
    bad(T::User, json!("bob"));
    bad(
        T::Link,
        json!([id.to_string(), Uuid::from_u128(8).to_string()]),
    );
    assert_eq!(ok(T::Link, json!(id.to_string())), json!([id.to_string()]));
}

#[test]
fn attachments_follow_their_limits() {
    use ColumnType as T;
    ok(
        T::Attachment,
        json!({"name": "a.png", "mime_type": "image/png", "size": 3}),
    );
    bad(
        T::Attachment,
        json!({"name": "a.pdf", "mime_type": "application/pdf", "size": 3}),
    );
    bad(
        T::Attachment,
        json!({"name": "a.png", "mime_type": "image/png", "size": 30}),
    );
    bad(
        T::Attachment,
        json!([{"name": "a", "mime_type": "image/png", "size": 1}, {"name": "b", "mime_type": "image/png", "size": 1}]),
    );
}

#[test]
fn durations() {
    assert_eq!(
        parse_duration(&json!("P1DT2H3M4.5S")),
        Some(((86_400 + 7_384) * 1_000_000) + 500_000)
    );
    assert_eq!(parse_duration(&json!("P2W")), Some(14 * 86_400 * 1_000_000));
    assert_eq!(parse_duration(&json!(90)), Some(90_000_000));
    assert_eq!(parse_duration(&json!("P")), None);
    assert_eq!(parse_duration(&json!("PT")), None);
    assert_eq!(parse_duration(&json!("1 day")), None);
    // Nine-digit parts past the 64-bit microsecond range are refused, not wrapped.
    assert_eq!(parse_duration(&json!("P999999999W")), None);
    assert_eq!(parse_duration(&json!("P999999999D")), None);
    assert_eq!(
        parse_duration(&json!("PT999999999H")),
        Some(999_999_999 * 3_600 * 1_000_000)
    );
    assert_eq!(format_duration(90_000_000_000), "P1DT1H");
    assert_eq!(format_duration(0), "PT0S");
    assert_eq!(format_duration(1_500_000), "PT1.5S");
    assert_eq!(ok(ColumnType::Interval, json!("PT36H")), json!("P1DT12H"));
}
