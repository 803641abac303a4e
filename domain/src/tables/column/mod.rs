//! Columns: the 19 types, the stored definition, and the rules of ColumnCreate and
//! ColumnUpdate (spec section 2).

pub mod computed;
mod create;
mod def;
mod fallback;
mod kind;
mod update;

pub use create::{ColumnSpec, LinkFacts, OtherTable, Surroundings, build_column, check_name};
pub use def::{Cardinality, ColumnDef, is_column_key};
pub use kind::ColumnType;
pub use update::{ColumnChanges, TypeChange, Updated, apply_changes, conversion_allowed};

/// Largest attachment file: 5 GiB.
pub const MAX_FILE_BYTES: i64 = 5 * 1024 * 1024 * 1024;
/// How long an uploaded attachment file may wait to be put in a cell: after this,
/// only a file some record already holds can be named again.
pub const ATTACH_WITHIN: chrono::Duration = chrono::Duration::hours(1);
/// How old the last upload of a file no record holds must be before it is removed
/// (twice the attach window, so that no write can still be naming it).
pub const UNHELD_FILE_KEPT: chrono::Duration = chrono::Duration::hours(2);
/// Options of a select column.
pub const OPTIONS: (usize, usize) = (1, 50);
/// Characters of one option.
pub const OPTION_CHARS: (usize, usize) = (1, 64);
/// Characters of a column name.
pub const NAME_CHARS: usize = 100;
/// Largest `max_length`.
pub const MAX_LENGTH: i64 = 1_000_000;
