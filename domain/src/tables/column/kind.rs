//! The 19 column types.

use serde::{Deserialize, Serialize};

/// A column type (spec section 2, "Column types").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnType {
    /// Short text.
    String,
    /// 64-bit integer.
    Integer,
    /// Double-precision number.
    Float,
    /// True or false.
    Boolean,
    /// Calendar date.
    Date,
    /// Instant (UTC).
    Datetime,
    /// Long text.
    Text,
    /// One of the options.
    Select,
    /// Several of the options.
    MultiSelect,
    /// Record ids of a target table (a stored relation).
    Link,
    /// Aggregate over linked records (computed).
    Rollup,
    /// Value of a linked record (computed).
    Lookup,
    /// Expression over the row (computed).
    Formula,
    /// File metadata.
    Attachment,
    /// Any JSON document.
    Json,
    /// One user id.
    User,
    /// One social media client id.
    SocialClient,
    /// One tagged principal: `user:<id>`, `smc:<id>` or `room:<id>`.
    Principal,
    /// A duration.
    Interval,
}

impl ColumnType {
    /// All 19 types.
    pub const ALL: [ColumnType; 19] = [
        Self::String,
        Self::Integer,
        Self::Float,
        Self::Boolean,
        Self::Date,
        Self::Datetime,
        Self::Text,
        Self::Select,
        Self::MultiSelect,
        Self::Link,
        Self::Rollup,
        Self::Lookup,
        Self::Formula,
        Self::Attachment,
        Self::Json,
        Self::User,
        Self::SocialClient,
        Self::Principal,
        Self::Interval,
    ];

    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::String => "string",
            Self::Integer => "integer",
            Self::Float => "float",
            Self::Boolean => "boolean",
            Self::Date => "date",
            Self::Datetime => "datetime",
            Self::Text => "text",
            Self::Select => "select",
            Self::MultiSelect => "multi_select",
            Self::Link => "link",
            Self::Rollup => "rollup",
            Self::Lookup => "lookup",
            Self::Formula => "formula",
            Self::Attachment => "attachment",
            Self::Json => "json",
            Self::User => "user",
            Self::SocialClient => "social_client",
            Self::Principal => "principal",
            Self::Interval => "interval",
        }
    }

    /// Parses a wire name.
    pub fn parse(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|t| t.as_str() == name)
    }

    /// Link, rollup, lookup and formula.
    pub fn is_computed(self) -> bool {
        matches!(
            self,
            Self::Link | Self::Rollup | Self::Lookup | Self::Formula
        )
    }

    /// Whether records hold a value of this type (every type but rollup, lookup and
    /// formula, whose values are computed on read).
    pub fn is_stored(self) -> bool {
        !matches!(self, Self::Rollup | Self::Lookup | Self::Formula)
    }

    /// Whether a page may be ordered by it (scalar stored types, not principal).
    pub fn is_sortable(self) -> bool {
        matches!(
            self,
            Self::String
                | Self::Integer
                | Self::Float
                | Self::Boolean
                | Self::Date
                | Self::Datetime
                | Self::Text
                | Self::Select
                | Self::User
                | Self::SocialClient
                | Self::Interval
        )
    }

    /// Whether it holds one comparable scalar (principal included).
    pub fn is_scalar(self) -> bool {
        self.is_sortable() || self == Self::Principal
    }

    /// Whether it holds a list (multi_select, link).
    pub fn is_list(self) -> bool {
        matches!(self, Self::MultiSelect | Self::Link)
    }

    /// Whether it is ordered (`gt`, `sum`, `min`...): numbers, dates, durations.
    pub fn is_numeric(self) -> bool {
        matches!(self, Self::Integer | Self::Float)
    }

    /// Whether it is textual (`contains` is a substring match).
    pub fn is_textual(self) -> bool {
        matches!(self, Self::String | Self::Text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nineteen_names_round_trip() {
        assert_eq!(ColumnType::ALL.len(), 19);
        for t in ColumnType::ALL {
            assert_eq!(ColumnType::parse(t.as_str()), Some(t));
            let json = serde_json::to_value(t).unwrap();
            assert_eq!(json, t.as_str());
        }
        let computed: Vec<_> = ColumnType::ALL
            .into_iter()
            .filter(|t| t.is_computed())
            .collect();
        assert_eq!(
            computed,
            vec![
                ColumnType::Link,
                ColumnType::Rollup,
                ColumnType::Lookup,
                ColumnType::Formula
            ]
        );
        assert!(!ColumnType::Principal.is_sortable());
    }
}
