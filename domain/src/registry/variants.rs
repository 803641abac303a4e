//! The variant names of an event enum, read from its `Deserialize` implementation.
//!
//! serde's derived `Deserialize` for an enum hands the deserializer the list of every
//! variant name. A deserializer that records that list and stops gives the complete
//! set of event types of an aggregate without a hand-kept list that could fall
//! behind the enum.

use serde::de::{self, DeserializeOwned, Visitor};
use serde::forward_to_deserialize_any;

/// Records the variants of the first enum it is asked for.
struct Probe<'a> {
    found: &'a mut Option<&'static [&'static str]>,
}

impl<'de> de::Deserializer<'de> for Probe<'_> {
    type Error = de::value::Error;

    fn deserialize_any<V: Visitor<'de>>(self, _: V) -> Result<V::Value, Self::Error> {
        Err(de::Error::custom("not an enum"))
    }

    fn deserialize_enum<V: Visitor<'de>>(
        self,
        _name: &'static str,
        variants: &'static [&'static str],
        _visitor: V,
    ) -> Result<V::Value, Self::Error> {
        *self.found = Some(variants);
        Err(de::Error::custom("variants recorded"))
    }

    forward_to_deserialize_any! {
        bool i8 i16 i32 i64 i128 u8 u16 u32 u64 u128 f32 f64 char str string
        bytes byte_buf option unit unit_struct newtype_struct seq tuple
        tuple_struct map struct identifier ignored_any
    }
}

/// Every variant name of the enum `T` (empty when `T` is not an enum).
pub fn variant_names<T: DeserializeOwned>() -> Vec<&'static str> {
    let mut found = None;
    // The probe always answers with an error once it has seen the variants.
    let _ = T::deserialize(Probe { found: &mut found });
    found.map(<[&str]>::to_vec).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::variant_names;
    use serde::Deserialize;

    #[derive(Deserialize)]
    #[allow(dead_code)]
    enum Sample {
        One,
        Two { x: i32 },
        Three(String),
    }

    #[test]
    fn every_variant_is_named() {
        assert_eq!(variant_names::<Sample>(), vec!["One", "Two", "Three"]);
        assert!(variant_names::<i32>().is_empty());
    }
}
