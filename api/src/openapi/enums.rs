//! The schema of a string enum, read from the enum's own `Deserialize`: serde's
//! unknown-variant error lists every accepted name, renames applied. Fields typed
//! with an enum of the domain (which does not depend on the document's library)
//! use [`string_enum`] through `schema_with` (query parameters: a type declared by
//! [`names_of`]), so the document offers exactly the names the server accepts and
//! cannot drift from them.

use serde::de::value::{Error, StrDeserializer};
use serde::de::{DeserializeOwned, IntoDeserializer};
use utoipa::openapi::schema::{Object, ObjectBuilder, Type};

/// The names `T` accepts, in declaration order.
pub fn variants<T: DeserializeOwned>() -> Vec<String> {
    let probe: StrDeserializer<'_, Error> = "\u{0}".into_deserializer();
    T::deserialize(probe)
        .err()
        .map_or_else(Vec::new, |e| expected_names(&e.to_string()))
}

/// The names an internally tagged enum (`#[serde(tag = "...")]`) accepts in its
/// `tag` field, read the same way from a document whose tag names nothing.
pub fn tagged_variants<T: DeserializeOwned>(tag: &str) -> Vec<String> {
    let probe = serde_json::json!({ tag: "\u{0}" });
    T::deserialize(probe)
        .err()
        .map_or_else(Vec::new, |e| expected_names(&e.to_string()))
}

/// The back-quoted names after "expected" in serde's unknown-variant message.
fn expected_names(message: &str) -> Vec<String> {
    let Some((_, expected)) = message.split_once(", expected ") else {
        return Vec::new();
    };
    expected
        .split('`')
        .skip(1)
        .step_by(2)
        .map(str::to_string)
        .collect()
}

/// A string schema whose values are `T`'s names.
///
/// # Panics
///
/// When `T` is not a string enum (its error names no variant): the document is
/// built at start-up, so a wrong use stops the first test that starts a server.
pub fn string_enum<T: DeserializeOwned>() -> Object {
    let names = variants::<T>();
    assert!(
        !names.is_empty(),
        "{} is not a string enum",
        std::any::type_name::<T>()
    );
    ObjectBuilder::new()
        .schema_type(Type::String)
        .enum_values(Some(names))
        .build()
}

/// Declares `$name`, a type whose schema is `$enum`'s names, for query parameters:
/// `#[param(value_type = $name, inline)]` keeps the parameter's description and
/// whether it is required, which `schema_with` drops for parameters.
macro_rules! names_of {
    ($name:ident, $enum:ty) => {
        #[doc = concat!("The names of `", stringify!($enum), "` (documentation only).")]
        pub struct $name;

        impl utoipa::PartialSchema for $name {
            fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
                utoipa::openapi::RefOr::T(utoipa::openapi::schema::Schema::Object(
                    $crate::openapi::enums::string_enum::<$enum>(),
                ))
            }
        }

        impl utoipa::ToSchema for $name {}
    };
}
pub(crate) use names_of;

names_of!(
    LifecycleNames,
    projections::read_models::page::LifecycleFilter
);
names_of!(RunStatusNames, domain::runs::run::RunStatus);
names_of!(ConsumerScopeNames, domain::secrets::ConsumerScope);

#[cfg(test)]
mod tests {
    use super::variants;
    use domain::tables::column::ColumnType;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[serde(rename_all = "snake_case")]
    #[allow(dead_code)]
    enum Two {
        First,
        SecondOne,
    }

    #[test]
    fn a_tagged_enum_names_its_variants_in_its_tag() {
        use domain::tables::trigger::Schedule;
        assert_eq!(
            super::tagged_variants::<Schedule>("type"),
            ["cron", "interval", "daily", "date_column_reached"]
        );
    }

    #[test]
    fn the_names_come_from_the_deserializer() {
        assert_eq!(variants::<Two>(), ["first", "second_one"]);
        let columns = variants::<ColumnType>();
        assert_eq!(columns.len(), ColumnType::ALL.len());
    }
}
