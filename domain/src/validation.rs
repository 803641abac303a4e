//! Field-level validation results, independent of HTTP.
//!
//! Rules that the spec states as request validation (bounds, lengths, enums) are
//! checked with these helpers and reported as a list of [`Violation`]s, which the API
//! renders as the standard 422 validation array.

use serde_json::Value;

/// What is wrong with one field.
#[derive(Debug, Clone, PartialEq)]
pub enum ViolationKind {
    /// The field is required.
    Missing,
    /// Below the minimum.
    GreaterThanEqual(i64),
    /// Above the maximum.
    LessThanEqual(i64),
    /// Too few characters or items.
    TooShort(usize),
    /// Too many characters or items.
    TooLong(usize),
    /// Not one of the allowed values.
    Enum(Vec<String>),
    /// A named rule with its own machine type and message.
    Rule {
        /// Machine-readable type, e.g. `value_error`.
        kind: &'static str,
        /// Human message.
        message: String,
    },
}

/// One invalid field.
#[derive(Debug, Clone, PartialEq)]
pub struct Violation {
    /// Path to the field, e.g. `["body", "allowed_regions", "0"]`.
    pub loc: Vec<String>,
    /// What is wrong.
    pub kind: ViolationKind,
    /// The offending input, when useful to echo (never a secret).
    pub input: Option<Value>,
}

/// Collects violations of one request.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Violations(pub Vec<Violation>);

impl Violations {
    /// An empty collection.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records a violation of a body field.
    pub fn push(&mut self, field: &str, kind: ViolationKind, input: Option<Value>) {
        self.0.push(Violation {
            loc: vec!["body".into(), field.into()],
            kind,
            input,
        });
    }

    /// Checks an integer against an inclusive range.
    pub fn range(&mut self, field: &str, value: i64, min: i64, max: i64) {
        if value < min {
            self.push(
                field,
                ViolationKind::GreaterThanEqual(min),
                Some(value.into()),
            );
        } else if value > max {
            self.push(field, ViolationKind::LessThanEqual(max), Some(value.into()));
        }
    }

    /// Checks the character length of a string against an inclusive range.
    pub fn length(&mut self, field: &str, value: &str, min: usize, max: usize) {
        let chars = value.chars().count();
        if chars < min {
            self.push(field, ViolationKind::TooShort(min), Some(value.into()));
        } else if chars > max {
            self.push(field, ViolationKind::TooLong(max), None);
        }
    }

    /// True when nothing was recorded.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `Ok` when empty, otherwise the violations.
    pub fn into_result(self) -> Result<(), Violations> {
        if self.is_empty() { Ok(()) } else { Err(self) }
    }
}
