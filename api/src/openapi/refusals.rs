//! The refusals of every route as data (`refusals.json`): per area and route, each
//! error status with what answers it, added to the document after the routers
//! built it. Route annotations carry only their success; the refusals live in one
//! table beside the error codes, where `api/tests/http/error_codes.rs` checks that
//! every code they name is a [`Code`](domain::error::Code) and every route they
//! name exists.

use crate::routes::{sandbox, tables};
use std::collections::BTreeMap;
use std::sync::LazyLock;
use utoipa::openapi::path::Operation;
use utoipa::openapi::{OpenApi, RefOr, Response};

/// Status → what answers it, per route (`"GET /path"`), per area.
pub type Refusals = BTreeMap<String, BTreeMap<String, BTreeMap<String, String>>>;

/// The table.
pub static REFUSALS: LazyLock<Refusals> = LazyLock::new(|| {
    serde_json::from_str(include_str!("refusals.json")).expect("refusals.json is valid")
});

/// Where the custom-table routes are mounted below their prefix.
const TABLE_MOUNTS: [&str; 5] = [
    "/chatroom/{chatroom_id}",
    "/department/{department_id}",
    "/company",
    "/chatroom",
    "/department",
];

/// The area and the route's own path of a document path.
pub fn route_of(path: &str) -> (&'static str, &str) {
    if let Some(rest) = path.strip_prefix(sandbox::PREFIX) {
        return ("sandbox", rest);
    }
    if let Some(rest) = path.strip_prefix(tables::PREFIX) {
        for mount in TABLE_MOUNTS {
            if let Some(route) = rest.strip_prefix(mount)
                && route.starts_with('/')
            {
                return ("tables", route);
            }
        }
    }
    ("service", path)
}

/// Adds each operation's refusals to the document.
pub fn add(document: &mut OpenApi) {
    for (path, method, operation) in super::operations_mut(document) {
        let (area, route) = route_of(path);
        add_to(
            operation,
            area,
            &format!("{} {route}", method.to_uppercase()),
        );
    }
}

fn add_to(operation: &mut Operation, area: &str, key: &str) {
    let Some(refusals) = REFUSALS.get(area).and_then(|routes| routes.get(key)) else {
        return;
    };
    for (status, answer) in refusals {
        let response = RefOr::T(Response::new(answer.clone()));
        operation
            .responses
            .responses
            .insert(status.clone(), response);
    }
}
