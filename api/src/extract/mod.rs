//! Request extractors that answer with the service's own error shapes.

mod json;
mod query;

pub use json::{ApiJson, OptionalJson, parse_json};
pub use query::ApiQuery;
