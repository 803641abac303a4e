//! Aggregations of record queries: the functions and the `group_by` fields.

use super::{Field, field};
use crate::tables::TableError;
use crate::tables::column::{ColumnDef, ColumnType};

/// An aggregation function.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AggregateOp {
    /// Rows.
    Count,
    /// Distinct non-empty values.
    CountDistinct,
    /// Sum (integer, float).
    Sum,
    /// Mean (integer, float).
    Avg,
    /// Smallest (numbers, dates, datetimes).
    Min,
    /// Largest (numbers, dates, datetimes).
    Max,
}

impl AggregateOp {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Count => "count",
            Self::CountDistinct => "count_distinct",
            Self::Sum => "sum",
            Self::Avg => "avg",
            Self::Min => "min",
            Self::Max => "max",
        }
    }

    /// Parses a wire name.
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "count" => Self::Count,
            "count_distinct" => Self::CountDistinct,
            "sum" => Self::Sum,
            "avg" => Self::Avg,
            "min" => Self::Min,
            "max" => Self::Max,
            _ => return None,
        })
    }

    /// Checks that the function applies to the field (`count` needs none).
    pub fn check(self, field: Option<&Field>) -> Result<(), TableError> {
        let t = field.map(Field::value_type);
        let ok = match (self, t) {
            (Self::Count, _) => true,
            (_, None) => false,
            (Self::CountDistinct, Some(t)) => t.is_scalar(),
            (Self::Sum | Self::Avg, Some(t)) => t.is_numeric(),
            (Self::Min | Self::Max, Some(t)) => {
                t.is_numeric() || matches!(t, ColumnType::Date | ColumnType::Datetime)
            }
        };
        if ok {
            Ok(())
        } else {
            Err(TableError::InvalidQuery(format!(
                "{self:?} needs {}",
                match self {
                    Self::Sum | Self::Avg => "an integer or float column",
                    Self::Min | Self::Max => "an integer, float, date or datetime column",
                    _ => "a scalar column",
                }
            )))
        }
    }
}

/// Checks a `group_by` field: scalar columns (principal keys on the tagged string).
pub fn group_field(columns: &[ColumnDef], reference: &str) -> Result<Field, TableError> {
    let field = field(columns, reference)?;
    if !field.value_type().is_scalar() || field == Field::Id {
        return Err(TableError::InvalidQuery(format!(
            "Cannot group by '{reference}'"
        )));
    }
    Ok(field)
}
