//! Cron schedules against an independent reading of POSIX cron: for generated
//! five-field expressions and instants, the next fires computed through `croner`
//! equal those of a day-by-day reading of the fields written here (the value sets
//! of each field; a day matches when its month matches and, with both day fields
//! restricted, either of them, otherwise both).

use super::Schedule;
use chrono::{DateTime, Datelike, Duration, NaiveDate, TimeZone, Utc};
use proptest::prelude::*;
use std::collections::BTreeSet;

/// The values a field allows.
fn values(field: &str, low: u32, high: u32) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    for item in field.split(',') {
        let (range, step) = match item.split_once('/') {
            Some((range, step)) => (range, step.parse::<usize>().unwrap()),
            None => (item, 1),
        };
        let (a, b) = match range.split_once('-') {
            _ if range == "*" => (low, high),
            Some((a, b)) => (a.parse().unwrap(), b.parse().unwrap()),
            None => {
                let n = range.parse().unwrap();
                (n, n)
            }
        };
        out.extend((a..=b).step_by(step));
    }
    out
}

/// The first `count` fires strictly after `after` (UTC), looking four years ahead.
fn posix_fires(expression: &str, after: DateTime<Utc>, count: usize) -> Vec<DateTime<Utc>> {
    let fields: Vec<&str> = expression.split(' ').collect();
    let minutes = values(fields[0], 0, 59);
    let hours = values(fields[1], 0, 23);
    let days = values(fields[2], 1, 31);
    let months = values(fields[3], 1, 12);
    let weekdays = values(fields[4], 0, 6);
    let restricted = |field: &str| !field.starts_with('*');
    let either = restricted(fields[2]) && restricted(fields[4]);
    let mut out = Vec::new();
    let mut date: NaiveDate = after.date_naive();
    for _ in 0..(4 * 366) {
        let in_month = months.contains(&date.month());
        let by_day = days.contains(&date.day());
        let by_weekday = weekdays.contains(&date.weekday().num_days_from_sunday());
        let day = if either {
            by_day || by_weekday
        } else {
            by_day && by_weekday
        };
        if in_month && day {
            for h in &hours {
                for m in &minutes {
                    let at = Utc.from_utc_datetime(&date.and_hms_opt(*h, *m, 0).unwrap());
                    if at > after {
                        out.push(at);
                        if out.len() == count {
                            return out;
                        }
                    }
                }
            }
        }
        date = date.succ_opt().unwrap();
    }
    out
}

/// A field: `*`, a number, a list, a range, a stepped range, or (outside the day
/// fields, whose reading of `*/n` differs between cron implementations) `*/n`.
fn field(low: u32, high: u32, star_step: bool) -> BoxedStrategy<String> {
    let number = low..=high;
    let range = (low..=high, low..=high).prop_map(|(a, b)| (a.min(b), a.max(b)));
    let mut options = vec![
        Just("*".to_string()).boxed(),
        number.clone().prop_map(|n| n.to_string()).boxed(),
        proptest::collection::btree_set(number, 2..4)
            .prop_map(|s| s.iter().map(u32::to_string).collect::<Vec<_>>().join(","))
            .boxed(),
        range.clone().prop_map(|(a, b)| format!("{a}-{b}")).boxed(),
        (range, 1..=high.max(1))
            .prop_map(|((a, b), s)| format!("{a}-{b}/{s}"))
            .boxed(),
    ];
    if star_step {
        options.push((1..=high).prop_map(|s| format!("*/{s}")).boxed());
    }
    proptest::strategy::Union::new(options).boxed()
}

fn expression() -> impl Strategy<Value = String> {
    (
        field(0, 59, true),
        field(0, 23, true),
        field(1, 31, false),
        field(1, 12, true),
        field(0, 6, false),
    )
        .prop_map(|(m, h, dom, mon, dow)| format!("{m} {h} {dom} {mon} {dow}"))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn cron_fires_match_an_independent_posix_reading(
        expression in expression(),
        offset in 0i64..(2 * 365 * 24 * 60),
    ) {
        let after = Utc.with_ymd_and_hms(2026, 1, 1, 0, 0, 0).unwrap() + Duration::minutes(offset);
        let expected = posix_fires(&expression, after, 3);
        prop_assume!(expected.len() == 3);
        let schedule = Schedule::Cron { expression: expression.clone(), timezone: "UTC".into() };
        let got = schedule.fires_after(after, 3).unwrap();
        prop_assert_eq!(got, expected, "{}", expression);
    }
}
