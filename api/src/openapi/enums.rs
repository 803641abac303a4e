//! The schema of a string enum, read from the enum's own `Deserialize`: serde's
//! unknown-variant error lists every accepted name, renames applied. Fields typed
//! with an enum of the domain (which does not depend on the document's library)
//! use [`string_enum`] through `schema_with`, so the document offers exactly the
//! names the server accepts and cannot drift from them.

use serde::de::value::{Error, StrDeserializer};
use serde::de::{DeserializeOwned, IntoDeserializer};
use utoipa::openapi::Array;
use utoipa::openapi::schema::{ArrayBuilder, Object, ObjectBuilder, Type};

/// The names `T` accepts, in declaration order.
pub fn variants<T: DeserializeOwned>() -> Vec<String> {
    let probe: StrDeserializer<'_, Error> = "\u{0}".into_deserializer();
    let Err(error) = T::deserialize(probe) else {
        return Vec::new();
    };
    let message = error.to_string();
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

/// An array schema of `T`'s names (a repeatable `name[]` query filter).
pub fn array_of_enum<T: DeserializeOwned>() -> Array {
    ArrayBuilder::new().items(string_enum::<T>()).build()
}

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
    fn the_names_come_from_the_deserializer() {
        assert_eq!(variants::<Two>(), ["first", "second_one"]);
        let columns = variants::<ColumnType>();
        assert_eq!(columns.len(), ColumnType::ALL.len());
    }
}
