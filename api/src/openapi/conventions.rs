//! What every operation shares, stated once in the document: the bounds of the
//! common parameters (pagination, `Idempotency-Key`), the refusals any request can
//! meet before its route's own rules (422 for a parameter or body that does not
//! parse, 400 for a body that breaks a rule, 404 for an id the caller cannot see),
//! and a description on every response (OpenAPI requires one).
//!
//! The bounds come from the constants the extractors check, so the document cannot
//! drift from the validation: a client generated from it sends what the server
//! accepts, and a fuzzer's "valid" request is valid.

use crate::idempotency::MAX_KEY_CHARS;
use crate::pagination::{MAX_PAGE_SIZE, MAX_TOKEN_CHARS};
use axum::http::StatusCode;
use utoipa::openapi::path::{Operation, Parameter};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, Schema, SchemaFormat, Type};
use utoipa::openapi::{OpenApi, RefOr, Response};

/// The largest `limit` of offset-paged lists.
const MAX_LIMIT: i64 = 100;

/// The schema a common parameter has everywhere, by name.
fn common_parameter_schema(name: &str) -> Option<Schema> {
    let integer = || ObjectBuilder::new().schema_type(Type::Integer);
    let string = || ObjectBuilder::new().schema_type(Type::String);
    let schema = match name {
        "page_size" => integer().minimum(Some(1)).maximum(Some(MAX_PAGE_SIZE)),
        "limit" => integer().minimum(Some(1)).maximum(Some(MAX_LIMIT)),
        "skip" | "offset" => integer().minimum(Some(0)).maximum(Some(i32::MAX)),
        "page_token" => string().max_length(Some(MAX_TOKEN_CHARS)),
        // Visible ASCII without surrounding spaces: what an HTTP header carries
        // unchanged (the server trims and counts characters).
        "Idempotency-Key" => string()
            .min_length(Some(1))
            .max_length(Some(MAX_KEY_CHARS))
            .pattern(Some("^[!-~]([ -~]*[!-~])?$")),
        _ => return None,
    };
    Some(Schema::Object(schema.build()))
}

/// Applies the conventions to every operation of the document.
pub fn apply(document: &mut OpenApi) {
    super::operation_ids::make_unique(document);
    for (_, _, operation) in super::operations_mut(document) {
        bound_parameters(operation);
        describe_file_uploads(operation);
        add_common_refusals(operation);
        describe_responses(operation);
    }
}

fn bound_parameters(operation: &mut Operation) {
    for parameter in operation.parameters.iter_mut().flatten() {
        if let RefOr::T(Parameter { name, schema, .. }) = parameter
            && let Some(common) = common_parameter_schema(name)
        {
            *schema = Some(RefOr::T(common));
        }
    }
}

/// Multipart uploads carry one part, `file`, with the bytes.
fn describe_file_uploads(operation: &mut Operation) {
    let Some(RefOr::T(body)) = operation.request_body.as_mut() else {
        return;
    };
    if let Some(RefOr::T(content)) = body.content.get_mut("multipart/form-data")
        && content.schema.is_none()
    {
        let file = ObjectBuilder::new()
            .schema_type(Type::String)
            .format(Some(SchemaFormat::KnownFormat(KnownFormat::Binary)));
        let form = ObjectBuilder::new()
            .schema_type(Type::Object)
            .property("file", file)
            .required("file");
        content.schema = Some(RefOr::T(Schema::Object(form.build())));
    }
}

fn add_common_refusals(operation: &mut Operation) {
    let parameters = operation.parameters.as_deref().unwrap_or_default();
    let has_path_id = parameters.iter().any(
        |p| matches!(p, RefOr::T(p) if p.parameter_in == utoipa::openapi::path::ParameterIn::Path),
    );
    let has_body = operation.request_body.is_some();
    let mut add = |status: &str, text: &str| {
        operation
            .responses
            .responses
            .entry(status.to_string())
            .or_insert_with(|| RefOr::T(Response::new(text)));
    };
    if has_body || !parameters.is_empty() {
        add(
            "422",
            "A path, query or header parameter, or the body, does not parse: `detail` lists \
             each problem with its `loc`, `msg` and `type`",
        );
    }
    if has_body {
        add(
            "400",
            "The body breaks one of the route's rules: `detail.code` names it",
        );
    }
    if has_path_id {
        add("404", "Nothing with this id exists that the caller may see");
    }
}

fn describe_responses(operation: &mut Operation) {
    for (status, response) in operation.responses.responses.iter_mut() {
        if let RefOr::T(response) = response
            && response.description.is_empty()
        {
            response.description = reason(status);
        }
    }
}

/// The reason phrase of a status (`"200"` → `OK`).
fn reason(status: &str) -> String {
    status
        .parse::<u16>()
        .ok()
        .and_then(|code| StatusCode::from_u16(code).ok())
        .and_then(|code| code.canonical_reason())
        .unwrap_or("Response")
        .to_string()
}

#[cfg(test)]
mod tests {
    use super::reason;

    #[test]
    fn a_status_reads_as_its_reason_phrase() {
        assert_eq!(reason("200"), "OK");
        assert_eq!(reason("201"), "Created");
        assert_eq!(reason("default"), "Response");
    }
}
