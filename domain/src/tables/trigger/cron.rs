//! Cron expressions as the spec allows them: five POSIX fields (minute, hour,
//! day of month, month, day of week; numbers, `*`, lists, ranges and steps; Sunday
//! is 0), matched by `croner` with the POSIX rule that a time matches either day
//! field when both are restricted. Everything else croner would also accept
//! (seconds, macros, names, day of week 7, `?`, `L`, `W`, `#`) is refused first.

use croner::Cron;
use croner::parser::{CronParser, Seconds, Year};

/// The fields in order, with their bounds.
const FIELDS: [(&str, u32, u32); 5] = [
    ("minute", 0, 59),
    ("hour", 0, 23),
    ("day of month", 1, 31),
    ("month", 1, 12),
    ("day of week", 0, 6),
];

/// Parses a strict five-field expression.
pub fn parse(expression: &str) -> Result<Cron, String> {
    let fields: Vec<&str> = expression.split_whitespace().collect();
    if fields.len() != FIELDS.len() {
        return Err(format!(
            "a cron expression has five fields (minute hour day-of-month month day-of-week), not {}",
            fields.len()
        ));
    }
    for (field, (name, low, high)) in fields.iter().zip(FIELDS) {
        check_field(field, low, high).map_err(|m| format!("{name} field '{field}': {m}"))?;
    }
    CronParser::builder()
        .seconds(Seconds::Disallowed)
        .year(Year::Disallowed)
        .build()
        .parse(&fields.join(" "))
        .map_err(|e| format!("cron expression '{expression}': {e}"))
}

fn number(text: &str, low: u32, high: u32) -> Result<u32, String> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) || text.len() > 2 {
        return Err(format!("'{text}' is not a number"));
    }
    let n: u32 = text
        .parse()
        .map_err(|_| format!("'{text}' is not a number"))?;
    if !(low..=high).contains(&n) {
        return Err(format!("{n} is outside {low}..{high}"));
    }
    Ok(n)
}

/// One field: comma-separated items, each `*`, `n`, `a-b`, `*/s` or `a-b/s`.
fn check_field(field: &str, low: u32, high: u32) -> Result<(), String> {
    for item in field.split(',') {
        let (base, step) = match item.split_once('/') {
            Some((base, step)) => (base, Some(step)),
            None => (item, None),
        };
        if let Some(step) = step {
            let step = number(step, 1, high.max(1))?;
            if step == 0 {
                return Err("a step is at least 1".into());
            }
            if base != "*" && !base.contains('-') {
                return Err(format!("a step follows '*' or a range, not '{base}'"));
            }
        }
        match base.split_once('-') {
            _ if base == "*" => {}
            Some((a, b)) => {
                let (a, b) = (number(a, low, high)?, number(b, low, high)?);
                if a > b {
                    return Err(format!("the range {a}-{b} runs backwards"));
                }
            }
            None => {
                number(base, low, high)?;
            }
        }
    }
    Ok(())
}
