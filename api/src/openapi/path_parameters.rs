//! Declares the path parameters that nesting adds. A route annotated as
//! `/tables/{table_id}` and mounted under `/chatroom/{chatroom_id}` appears in the
//! document as `/.../chatroom/{chatroom_id}/tables/{table_id}`, but its annotation
//! declares only `table_id`; a client generated from the document could not call
//! it. Every `{name}` of a path that an operation does not declare is added as a
//! required string path parameter (a UUID when the name ends in `_id`).

use utoipa::openapi::path::{Operation, Parameter, ParameterBuilder, ParameterIn};
use utoipa::openapi::schema::{KnownFormat, ObjectBuilder, SchemaFormat, Type};
use utoipa::openapi::{OpenApi, RefOr, Required};

/// The `{name}` segments of a path, in order.
fn names(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
        .collect()
}

fn parameter(name: &str) -> Parameter {
    let mut schema = ObjectBuilder::new().schema_type(Type::String);
    if name.ends_with("_id") {
        schema = schema.format(Some(SchemaFormat::KnownFormat(KnownFormat::Uuid)));
    }
    ParameterBuilder::new()
        .name(name)
        .parameter_in(ParameterIn::Path)
        .required(Required::True)
        .description(Some(format!("The {} of the mount", name.replace('_', " "))))
        .schema(Some(schema.build()))
        .build()
}

fn declare(operation: &mut Operation, names: &[&str]) {
    let parameters = operation.parameters.get_or_insert_with(Vec::new);
    for name in names {
        let declared = parameters.iter().any(
            |p| matches!(p, RefOr::T(p) if p.name == *name && p.parameter_in == ParameterIn::Path),
        );
        if !declared {
            parameters.push(RefOr::T(parameter(name)));
        }
    }
}

/// Adds every undeclared path parameter of every operation.
pub fn declare_all(document: &mut OpenApi) {
    for (path, _, operation) in super::operations_mut(document) {
        declare(operation, &names(path));
    }
}

#[cfg(test)]
mod tests {
    use super::names;

    #[test]
    fn path_parameters_are_the_braced_segments() {
        assert_eq!(
            names("/p/chatroom/{chatroom_id}/tables/{table_id}/records"),
            ["chatroom_id", "table_id"]
        );
        assert!(names("/healthz").is_empty());
    }
}
