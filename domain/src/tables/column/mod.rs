//! Columns: the 19 types, the stored definition, and the rules of ColumnCreate and
//! ColumnUpdate (spec section 2).

pub mod computed;
mod create;
mod def;
mod kind;
mod update;

pub use create::{ColumnSpec, LinkFacts, build_column, check_name};
pub use def::{Cardinality, ColumnDef, is_column_key};
pub use kind::ColumnType;
pub use update::{ColumnChanges, TypeChange, Updated, apply_changes, conversion_allowed};

/// Largest attachment file: 5 GiB.
pub const MAX_FILE_BYTES: i64 = 5 * 1024 * 1024 * 1024;
/// Options of a select column.
pub const OPTIONS: (usize, usize) = (1, 50);
/// Characters of one option.
pub const OPTION_CHARS: (usize, usize) = (1, 64);
/// Characters of a column name.
pub const NAME_CHARS: usize = 100;
/// Largest `max_length`.
pub const MAX_LENGTH: i64 = 1_000_000;
