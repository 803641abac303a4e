//! Request extractors that answer with the service's own error shapes.

mod json;
mod path;
mod query;

pub use json::{ApiJson, OptionalJson, double_option, parse_json};
pub use path::ApiPath;
pub use query::ApiQuery;
