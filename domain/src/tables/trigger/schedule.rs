//! Schedules of schedule triggers (issue 22 contract): `cron`, `interval`, `daily`
//! and `date_column_reached`, checked when the trigger set is saved, and the fire
//! times a schedule-preview shows.

use super::cron;
use crate::tables::column::{ColumnDef, ColumnType};
use chrono::{DateTime, Duration, SubsecRound, Utc};
use chrono_tz::Tz;
use serde::{Deserialize, Serialize};

/// Seconds between interval windows, at least and at most.
pub const EVERY_SECONDS: (i64, i64) = (60, 2_592_000);

/// When a schedule trigger fires.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Schedule {
    /// Five POSIX cron fields in an IANA timezone; recordless, never backfills.
    Cron {
        /// The expression.
        expression: String,
        /// IANA timezone the fields are read in.
        timezone: String,
    },
    /// Windows of `every_seconds` from `anchor_at` (the Unix epoch when absent).
    Interval {
        /// Window length.
        every_seconds: i64,
        /// The first window's start.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        anchor_at: Option<DateTime<Utc>>,
    },
    /// Every day at `at` (`HH:MM`) in an IANA timezone.
    Daily {
        /// Local time of day.
        at: String,
        /// IANA timezone.
        timezone: String,
    },
    /// When a date or datetime column's value (plus `offset_seconds`) is reached,
    /// once per record and value.
    DateColumnReached {
        /// The column (stored as its internal key).
        column: String,
        /// Seconds added to the value (negative: before it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        offset_seconds: Option<i64>,
    },
}

fn timezone(name: &str) -> Result<Tz, String> {
    name.parse::<Tz>()
        .map_err(|_| format!("'{name}' is not an IANA timezone"))
}

/// `HH:MM` as (hour, minute).
fn time_of_day(at: &str) -> Result<(u32, u32), String> {
    let parsed = at
        .split_once(':')
        .filter(|(h, m)| h.len() == 2 && m.len() == 2)
        .and_then(|(h, m)| Some((h.parse::<u32>().ok()?, m.parse::<u32>().ok()?)))
        .filter(|(h, m)| *h < 24 && *m < 60);
    parsed.ok_or_else(|| format!("at '{at}' is not a time of day HH:MM"))
}

impl Schedule {
    /// The `type` as written.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Cron { .. } => "cron",
            Self::Interval { .. } => "interval",
            Self::Daily { .. } => "daily",
            Self::DateColumnReached { .. } => "date_column_reached",
        }
    }

    /// Whether it fires for a record (only `date_column_reached` does).
    pub fn has_record(&self) -> bool {
        matches!(self, Self::DateColumnReached { .. })
    }

    /// The schedule checked, its column named by internal key. An invalid cron
    /// expression is [`ScheduleError::Cron`].
    pub fn check(self, columns: &[ColumnDef]) -> Result<Self, ScheduleError> {
        let invalid = ScheduleError::Invalid;
        Ok(match self {
            Self::Cron {
                expression,
                timezone: zone,
            } => {
                cron::parse(&expression).map_err(ScheduleError::Cron)?;
                timezone(&zone).map_err(invalid)?;
                Self::Cron {
                    expression: expression.split_whitespace().collect::<Vec<_>>().join(" "),
                    timezone: zone,
                }
            }
            Self::Interval {
                every_seconds,
                anchor_at,
            } => {
                if !(EVERY_SECONDS.0..=EVERY_SECONDS.1).contains(&every_seconds) {
                    return Err(invalid(format!(
                        "every_seconds must be {}..{}",
                        EVERY_SECONDS.0, EVERY_SECONDS.1
                    )));
                }
                Self::Interval {
                    every_seconds,
                    anchor_at,
                }
            }
            Self::Daily { at, timezone: zone } => {
                time_of_day(&at).map_err(invalid)?;
                timezone(&zone).map_err(invalid)?;
                Self::Daily { at, timezone: zone }
            }
            Self::DateColumnReached {
                column,
                offset_seconds,
            } => {
                let found = columns
                    .iter()
                    .find(|c| c.key == column)
                    .or_else(|| columns.iter().find(|c| c.name == column))
                    .filter(|c| matches!(c.column_type, ColumnType::Date | ColumnType::Datetime))
                    .ok_or_else(|| {
                        invalid(format!(
                            "column '{column}' is not a date or datetime column"
                        ))
                    })?;
                if offset_seconds.is_some_and(|s| s.abs() > 366 * 86_400) {
                    return Err(invalid(
                        "offset_seconds is at most a year either way".into(),
                    ));
                }
                Self::DateColumnReached {
                    column: found.key.clone(),
                    offset_seconds,
                }
            }
        })
    }

    /// Up to `count` fire times strictly after `from` (a `date_column_reached`
    /// schedule fires by record values and has none of its own).
    pub fn fires_after(
        &self,
        from: DateTime<Utc>,
        count: usize,
    ) -> Result<Vec<DateTime<Utc>>, String> {
        // Schedules fire on whole seconds.
        let from = from.trunc_subsecs(0);
        Ok(match self {
            Self::Cron {
                expression,
                timezone: zone,
            } => {
                let zone = timezone(zone)?;
                cron::parse(expression)?
                    .iter_after(from.with_timezone(&zone))
                    .take(count)
                    .map(|at| at.with_timezone(&Utc))
                    .collect()
            }
            Self::Daily { at, timezone: zone } => {
                let (hour, minute) = time_of_day(at)?;
                let zone = timezone(zone)?;
                cron::parse(&format!("{minute} {hour} * * *"))?
                    .iter_after(from.with_timezone(&zone))
                    .take(count)
                    .map(|at| at.with_timezone(&Utc))
                    .collect()
            }
            Self::Interval {
                every_seconds,
                anchor_at,
            } => {
                let anchor = anchor_at.unwrap_or(DateTime::UNIX_EPOCH);
                // The first window start strictly after `from`.
                let elapsed = (from - anchor).num_seconds();
                let k = if elapsed < 0 {
                    0
                } else {
                    elapsed / every_seconds + 1
                };
                (0..count as i64)
                    .filter_map(|i| {
                        let offset = every_seconds.checked_mul(k + i)?;
                        anchor.checked_add_signed(Duration::try_seconds(offset)?)
                    })
                    .collect()
            }
            Self::DateColumnReached { .. } => {
                return Err("a date_column_reached schedule fires by record values".into());
            }
        })
    }
}

impl Schedule {
    /// The latest fire time in `(since, now]`, if any: the one window a schedule
    /// serves after any pause (missed earlier windows are not run). `None` for
    /// `date_column_reached`, which fires by record values.
    pub fn latest_due(&self, since: DateTime<Utc>, now: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let now = now.trunc_subsecs(0);
        let latest = match self {
            Self::Cron {
                expression,
                timezone: zone,
            } => {
                let zone = timezone(zone).ok()?;
                let cron = cron::parse(expression).ok()?;
                cron.find_previous_occurrence(&now.with_timezone(&zone), true)
                    .ok()?
                    .with_timezone(&Utc)
            }
            Self::Daily { at, timezone: zone } => {
                let (hour, minute) = time_of_day(at).ok()?;
                let zone = timezone(zone).ok()?;
                let cron = cron::parse(&format!("{minute} {hour} * * *")).ok()?;
                cron.find_previous_occurrence(&now.with_timezone(&zone), true)
                    .ok()?
                    .with_timezone(&Utc)
            }
            Self::Interval {
                every_seconds,
                anchor_at,
            } => {
                let anchor = anchor_at.unwrap_or(DateTime::UNIX_EPOCH);
                let elapsed = (now - anchor).num_seconds();
                if elapsed < 0 {
                    return None;
                }
                let offset = (elapsed / every_seconds).checked_mul(*every_seconds)?;
                anchor.checked_add_signed(Duration::try_seconds(offset)?)?
            }
            Self::DateColumnReached { .. } => return None,
        };
        (latest > since).then_some(latest)
    }
}

/// Why a schedule is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScheduleError {
    /// The cron expression (400 `invalid_cron_expression`).
    Cron(String),
    /// Anything else.
    Invalid(String),
}
