use super::*;
use crate::tables::column::ColumnType;
use chrono::{DateTime, Utc};
use serde_json::json;

fn columns() -> Vec<ColumnDef> {
    vec![
        ColumnDef::new("col_1", "Status", ColumnType::String),
        ColumnDef::new("col_2", "Due", ColumnType::Date),
        ColumnDef::new("col_3", "Amount", ColumnType::Integer),
    ]
}

fn trigger(value: serde_json::Value) -> Trigger {
    serde_json::from_value(value).unwrap()
}

fn at(text: &str) -> DateTime<Utc> {
    text.parse().unwrap()
}

#[test]
fn triggers_are_stored_by_column_key() {
    let checked = check(
        vec![trigger(
            json!({"id": "on-new", "name": "New", "on": "created",
            "when": {"column": "Status", "op": "eq", "value": "open"},
            "actions": [{"type": "update_record", "values": {"Amount": "$row.Amount"}}]}),
        )],
        &columns(),
        &[],
    )
    .unwrap();
    assert_eq!(
        checked[0].when,
        Some(json!({"column": "col_1", "op": "eq", "value": "open"}))
    );
    assert_eq!(
        checked[0].actions[0],
        Action::UpdateRecord {
            values: serde_json::from_value(json!({"Amount": "$row.col_3"})).unwrap()
        }
    );
    assert!(checked[0].reads("col_1") && checked[0].reads("col_3"));
    assert!(!checked[0].reads("col_2"));
}

#[test]
fn row_tokens_in_a_sandbox_input_are_keyed_at_any_depth() {
    let room = uuid::Uuid::from_u128(1);
    let checked = check(
        vec![trigger(
            json!({"id": "run", "name": "Run", "on": "created",
            "actions": [{"type": "run_sandbox_task", "chatroom_id": room, "task_version_id": room,
                         "input": {"a": "$row.Status", "b": [{"c": "$row.Due"}], "d": "$rowless"}}]}),
        )],
        &columns(),
        &[],
    )
    .unwrap();
    assert_eq!(
        checked[0].actions[0],
        Action::RunSandboxTask {
            chatroom_id: room,
            task_version_id: room,
            input: json!({"a": "$row.col_1", "b": [{"c": "$row.col_2"}], "d": "$rowless"}),
        }
    );
    assert!(checked[0].reads("col_2") && !checked[0].reads("col_3"));
    let unknown = json!({"id": "run", "name": "Run", "on": "created",
        "actions": [{"type": "run_sandbox_task", "chatroom_id": room, "task_version_id": room,
                     "input": {"deep": ["$row.Nope"]}}]});
    assert!(check(vec![trigger(unknown)], &columns(), &[]).is_err());
}

#[test]
fn refusals_name_the_problem() {
    let cases = [
        (
            json!({"id": "Bad", "name": "x", "on": "created", "actions": [{"type": "update_record", "values": {}}]}),
            "must match",
        ),
        (
            json!({"id": "a", "name": "x", "actions": [{"type": "update_record", "values": {}}]}),
            "exactly one of on and schedule",
        ),
        (
            json!({"id": "a", "name": "x", "on": "created", "actions": []}),
            "1..10 actions",
        ),
        (
            json!({"id": "a", "name": "x", "schedule": {"type": "interval", "every_seconds": 59}, "actions": [{"type": "update_record", "values": {}}]}),
            "every_seconds",
        ),
        (
            json!({"id": "a", "name": "x", "schedule": {"type": "interval", "every_seconds": 60}, "actions": [{"type": "update_record", "values": {}}]}),
            "fires without one",
        ),
        (
            json!({"id": "a", "name": "x", "schedule": {"type": "daily", "at": "24:00", "timezone": "UTC"}, "actions": [{"type": "create_record", "table_id": uuid::Uuid::nil(), "values": {}}]}),
            "HH:MM",
        ),
        (
            json!({"id": "a", "name": "x", "schedule": {"type": "daily", "at": "09:00", "timezone": "Mars/Base"}, "actions": [{"type": "create_record", "table_id": uuid::Uuid::nil(), "values": {}}]}),
            "IANA",
        ),
        (
            json!({"id": "a", "name": "x", "schedule": {"type": "date_column_reached", "column": "Status"}, "actions": [{"type": "update_record", "values": {}}]}),
            "not a date",
        ),
        (
            json!({"id": "a", "name": "x", "schedule": {"type": "cron", "expression": "0 9 * * *", "timezone": "UTC"}, "when": {"column": "Status", "op": "is_null"}, "actions": [{"type": "create_record", "table_id": uuid::Uuid::nil(), "values": {}}]}),
            "when needs a record",
        ),
        (
            json!({"id": "a", "name": "x", "schedule": {"type": "cron", "expression": "0 9 * * *", "timezone": "UTC"}, "actions": [{"type": "create_record", "table_id": uuid::Uuid::nil(), "values": {"a": "$row.Status"}}]}),
            "fires without one",
        ),
        (
            json!({"id": "a", "name": "x", "on": "updated", "actions": [{"type": "update_record", "values": {"a": "$row.Nope"}}]}),
            "not a stored column",
        ),
    ];
    for (value, expected) in cases {
        let error = check(vec![trigger(value.clone())], &columns(), &[]).unwrap_err();
        assert!(error.to_string().contains(expected), "{value}: {error}");
    }
    let command = json!({"id": "a", "name": "x", "on": "created", "actions": [{"type": "execute_command", "command_id": "c"}]});
    assert_eq!(
        check(vec![trigger(command)], &columns(), &[]).unwrap_err(),
        TableError::CommandsUnavailable
    );
}

#[test]
fn cron_is_strict_posix() {
    for bad in [
        "0 0 9 * * *",
        "@daily",
        "0 9 * * MON",
        "0 9 * JAN *",
        "0 9 * * 7",
        "0 9 ? * *",
        "0 9 L * *",
        "0 9 * * 1#2",
        "0 9 1W * *",
        "60 * * * *",
        "5/10 * * * *",
        "10-5 * * * *",
    ] {
        let error = cron::parse(bad).map(|_| ()).unwrap_err();
        assert!(!error.is_empty(), "{bad}");
    }
    for good in [
        "*/15 9-17 * * 1-5",
        "0 0 1,15 * *",
        "30 2 * 6 0",
        "0 0 1-7 * 1",
    ] {
        cron::parse(good).unwrap();
    }
    let schedule = |e: &str| Schedule::Cron {
        expression: e.into(),
        timezone: "UTC".into(),
    };
    let wrong = check(
        vec![trigger(json!({"id": "a", "name": "x", "schedule": {"type": "cron", "expression": "0 9 * * MON", "timezone": "UTC"},
            "actions": [{"type": "create_record", "table_id": uuid::Uuid::nil(), "values": {}}]}))],
        &columns(),
        &[],
    )
    .unwrap_err();
    assert!(matches!(wrong, TableError::InvalidCron(_)), "{wrong:?}");
    // Both day fields restricted: either matches (the 1st to 7th, or any Monday).
    let fires = schedule("0 0 1-7 * 1")
        .fires_after(at("2026-06-07T12:00:00Z"), 3)
        .unwrap();
    assert_eq!(
        fires,
        [
            at("2026-06-08T00:00:00Z"),
            at("2026-06-15T00:00:00Z"),
            at("2026-06-22T00:00:00Z")
        ]
    );
}

#[test]
fn schedules_fire_in_their_timezone_across_dst() {
    let daily = Schedule::Daily {
        at: "09:00".into(),
        timezone: "Europe/Berlin".into(),
    };
    // Berlin moves to summer time on 2026-03-29: 08:00 UTC before, 07:00 UTC after.
    let fires = daily.fires_after(at("2026-03-28T12:00:00Z"), 2).unwrap();
    assert_eq!(
        fires,
        [at("2026-03-29T07:00:00Z"), at("2026-03-30T07:00:00Z")]
    );
    let fires = daily.fires_after(at("2026-03-27T12:00:00Z"), 1).unwrap();
    assert_eq!(fires, [at("2026-03-28T08:00:00Z")]);
    let interval = Schedule::Interval {
        every_seconds: 3600,
        anchor_at: Some(at("2026-01-01T00:30:00Z")),
    };
    let fires = interval.fires_after(at("2026-01-01T02:30:00Z"), 2).unwrap();
    assert_eq!(
        fires,
        [at("2026-01-01T03:30:00Z"), at("2026-01-01T04:30:00Z")]
    );
    let before = interval.fires_after(at("2025-12-31T00:00:00Z"), 1).unwrap();
    assert_eq!(before, [at("2026-01-01T00:30:00Z")]);
}

#[test]
fn a_schedule_keeps_its_type_under_its_id() {
    let cron = trigger(
        json!({"id": "a", "name": "x", "schedule": {"type": "cron", "expression": "0 9 * * *", "timezone": "UTC"},
        "actions": [{"type": "create_record", "table_id": uuid::Uuid::nil(), "values": {}}]}),
    );
    let saved = check(vec![cron], &columns(), &[]).unwrap();
    let daily = trigger(
        json!({"id": "a", "name": "x", "schedule": {"type": "daily", "at": "09:00", "timezone": "UTC"},
        "actions": [{"type": "create_record", "table_id": uuid::Uuid::nil(), "values": {}}]}),
    );
    let error = check(vec![daily.clone()], &columns(), &saved).unwrap_err();
    assert!(
        matches!(error, TableError::ScheduleKindChange(_)),
        "{error:?}"
    );
    let renamed = Trigger {
        id: "b".into(),
        ..daily
    };
    check(vec![renamed], &columns(), &saved).unwrap();
}

#[test]
fn a_stepped_star_restricts_its_day_field() {
    // `*/2` in the day of month is restricted: with a restricted day of week,
    // either matches (odd days, or Mondays).
    let schedule = Schedule::Cron {
        expression: "0 0 */2 * 1".into(),
        timezone: "UTC".into(),
    };
    let fires = schedule.fires_after(at("2026-06-01T12:00:00Z"), 3).unwrap();
    assert_eq!(
        fires,
        [
            at("2026-06-03T00:00:00Z"),
            at("2026-06-05T00:00:00Z"),
            at("2026-06-07T00:00:00Z")
        ]
    );
}

proptest::proptest! {
    /// Any expression text gives a schedule or a refusal, never a panic.
    #[test]
    fn arbitrary_cron_text_never_panics(expression in "[0-9*/,\\- LW#?@a-zA-Z]{0,40}") {
        let _ = cron::parse(&expression);
        let schedule = Schedule::Cron { expression, timezone: "UTC".into() };
        let _ = schedule.fires_after(at("2026-01-01T00:00:00Z"), 2);
    }

    /// Any JSON of the trigger shape is checked or refused, never a panic.
    #[test]
    fn arbitrary_trigger_sets_never_panic(
        id in "[a-zA-Z0-9_-]{0,70}",
        every in proptest::prelude::any::<i64>(),
        at_text in "[0-9:]{0,6}",
        column in "(Status|Due|Amount|col_1|col_2|nope|\\$row\\.Status)",
    ) {
        for schedule in [
            json!({"type": "interval", "every_seconds": every}),
            json!({"type": "daily", "at": at_text, "timezone": "Asia/Tokyo"}),
            json!({"type": "date_column_reached", "column": column, "offset_seconds": every}),
        ] {
            let value = json!({"id": id, "name": "x", "schedule": schedule,
                "actions": [{"type": "update_record", "values": {"Amount": column}}]});
            if let Ok(trigger) = serde_json::from_value::<Trigger>(value)
                && let Ok(checked) = check(vec![trigger], &columns(), &[])
            {
                let _ = checked[0].schedule.as_ref().map(|s| s.fires_after(at("2026-01-01T00:00:00Z"), 3));
            }
        }
    }
}

#[test]
fn the_latest_due_window_is_the_only_one_served() {
    let interval = Schedule::Interval {
        every_seconds: 3600,
        anchor_at: Some(at("2026-01-01T00:30:00Z")),
    };
    // Three windows passed since the last one served: only the latest is due.
    let due = interval.latest_due(at("2026-01-01T00:30:00Z"), at("2026-01-01T03:45:00Z"));
    assert_eq!(due, Some(at("2026-01-01T03:30:00Z")));
    assert_eq!(
        interval.latest_due(at("2026-01-01T03:30:00Z"), at("2026-01-01T04:29:59Z")),
        None,
        "served already"
    );
    assert_eq!(
        interval.latest_due(at("2025-01-01T00:00:00Z"), at("2025-12-31T00:00:00Z")),
        None
    );
    let cron = Schedule::Cron {
        expression: "0 2 * * *".into(),
        timezone: "Europe/Berlin".into(),
    };
    assert_eq!(
        cron.latest_due(at("2026-11-20T00:00:00Z"), at("2026-11-28T01:30:00Z")),
        Some(at("2026-11-28T01:00:00Z"))
    );
    let daily = Schedule::Daily {
        at: "07:30".into(),
        timezone: "Asia/Tokyo".into(),
    };
    assert_eq!(
        daily.latest_due(at("2026-11-27T22:30:00Z"), at("2026-11-28T22:29:00Z")),
        None
    );
    assert_eq!(
        daily.latest_due(at("2026-11-27T22:30:00Z"), at("2026-11-28T22:30:00Z")),
        Some(at("2026-11-28T22:30:00Z"))
    );
}

#[test]
fn an_action_takes_only_its_own_fields() {
    let update = json!({"type": "update_record", "values": {"Amount": 1}});
    assert!(serde_json::from_value::<Action>(update).is_ok());
    let elsewhere = json!({"type": "update_record", "values": {"Amount": 1},
                           "table_id": "00000000-0000-0000-0000-000000000001"});
    assert!(serde_json::from_value::<Action>(elsewhere).is_err());
    let run = json!({"type": "run_sandbox_task", "chatroom_id": "00000000-0000-0000-0000-000000000001",
                     "task_version_id": "00000000-0000-0000-0000-000000000002"});
    assert!(serde_json::from_value::<Action>(run).is_ok());
}
