//! Request extractors that answer with the service's own error shapes.

mod json;
mod multipart;
mod path;
mod query;

pub use json::{ApiJson, OptionalJson, double_option, parse_json};
pub use multipart::{invalid_file, read_file_part, with_file_part};
pub use path::ApiPath;
pub use query::{ApiQuery, storable};
