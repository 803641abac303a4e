//! Run inputs: bounded parsing, RFC 8785 (JCS) canonicalization and digests.
//!
//! An input is at most 1 MiB, 64 levels deep and 100,000 nodes, with no NUL
//! character and no duplicate object key. The bounds are checked while parsing,
//! before the value is built, so a hostile body costs little. The canonical form is
//! the exact content of the run's inputs file, and its SHA-256 is the input digest.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};
use sha2::{Digest, Sha256};
use std::cell::Cell;
use std::collections::HashSet;
use std::fmt;

/// The bounds of a run input (spec section 8).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InputLimits {
    /// Bytes of canonical JSON at most.
    pub max_bytes: usize,
    /// Nesting depth at most.
    pub max_depth: usize,
    /// Values (scalars, arrays, objects) at most.
    pub max_nodes: usize,
}

impl Default for InputLimits {
    fn default() -> Self {
        Self {
            max_bytes: 1 << 20,
            max_depth: 64,
            max_nodes: 100_000,
        }
    }
}

/// Why an input was refused. The `Display` text starts with the rule's name.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InputError {
    /// Over the byte limit.
    #[error("input_too_large: the input exceeds {0} bytes")]
    TooLarge(usize),
    /// Over the depth limit.
    #[error("input_too_deep: the input nests deeper than {0} levels")]
    TooDeep(usize),
    /// Over the node limit.
    #[error("input_too_many_nodes: the input has more than {0} values")]
    TooManyNodes(usize),
    /// A NUL character in a string or key.
    #[error("input_contains_nul: strings and keys may not contain NUL")]
    Nul,
    /// A key twice in one object.
    #[error("input_duplicate_key: key `{0}` appears twice in one object")]
    DuplicateKey(String),
    /// Not JSON.
    #[error("input_not_json: {0}")]
    Syntax(String),
}

impl InputError {
    /// The rule's name, e.g. `input_too_deep`.
    pub fn rule(&self) -> &'static str {
        match self {
            Self::TooLarge(_) => "input_too_large",
            Self::TooDeep(_) => "input_too_deep",
            Self::TooManyNodes(_) => "input_too_many_nodes",
            Self::Nul => "input_contains_nul",
            Self::DuplicateKey(_) => "input_duplicate_key",
            Self::Syntax(_) => "input_not_json",
        }
    }
}

/// A parsed input with its canonical bytes and digest.
#[derive(Debug, Clone, PartialEq)]
pub struct CanonicalInput {
    /// The value.
    pub value: Value,
    /// RFC 8785 canonical JSON: the inputs file's exact bytes.
    pub canonical: Vec<u8>,
    /// `sha256:<hex>` of `canonical`.
    pub digest: String,
}

/// Canonicalizes a value already parsed within bounds.
pub fn canonicalize(value: Value, limits: InputLimits) -> Result<CanonicalInput, InputError> {
    let canonical =
        serde_json_canonicalizer::to_vec(&value).map_err(|e| InputError::Syntax(e.to_string()))?;
    if canonical.len() > limits.max_bytes {
        return Err(InputError::TooLarge(limits.max_bytes));
    }
    let digest = digest(&canonical);
    Ok(CanonicalInput {
        value,
        canonical,
        digest,
    })
}

/// `sha256:<hex>` of bytes.
pub fn digest(bytes: &[u8]) -> String {
    format!("sha256:{}", hex::encode(Sha256::digest(bytes)))
}

/// Parses JSON text within bounds and canonicalizes it.
pub fn parse(text: &[u8], limits: InputLimits) -> Result<CanonicalInput, InputError> {
    canonicalize(parse_value(text, limits)?, limits)
}

/// Parses JSON text within bounds, without canonicalizing it (for text that only
/// carries an input, or that is not one).
pub fn parse_value(text: &[u8], limits: InputLimits) -> Result<Value, InputError> {
    if text.len() > limits.max_bytes {
        return Err(InputError::TooLarge(limits.max_bytes));
    }
    let mut deserializer = serde_json::Deserializer::from_slice(text);
    let value = deserialize_bounded(&mut deserializer, limits)
        .map_err(|e| classify(&e.to_string(), limits))?;
    deserializer
        .end()
        .map_err(|e| InputError::Syntax(e.to_string()))?;
    Ok(value)
}

/// Deserializes a value within bounds from any serde deserializer (used for the
/// `input` field of request bodies, so the bounds apply while the body is parsed).
pub fn deserialize_bounded<'de, D: Deserializer<'de>>(
    deserializer: D,
    limits: InputLimits,
) -> Result<Value, D::Error> {
    let budget = Budget {
        limits,
        nodes: Cell::new(0),
    };
    ValueSeed {
        budget: &budget,
        depth: 1,
    }
    .deserialize(deserializer)
}

/// Turns an error text from [`deserialize_bounded`] back into its rule.
pub fn classify(text: &str, limits: InputLimits) -> InputError {
    if text.starts_with("input_too_deep") {
        InputError::TooDeep(limits.max_depth)
    } else if text.starts_with("input_too_many_nodes") {
        InputError::TooManyNodes(limits.max_nodes)
    } else if text.starts_with("input_contains_nul") {
        InputError::Nul
    } else if let Some(rest) = text.strip_prefix("input_duplicate_key: key `") {
        InputError::DuplicateKey(rest.split('`').next().unwrap_or("").to_string())
    } else {
        InputError::Syntax(text.to_string())
    }
}

struct Budget {
    limits: InputLimits,
    nodes: Cell<usize>,
}

impl Budget {
    fn count<E: serde::de::Error>(&self) -> Result<(), E> {
        let nodes = self.nodes.get() + 1;
        self.nodes.set(nodes);
        if nodes > self.limits.max_nodes {
            return Err(E::custom(InputError::TooManyNodes(self.limits.max_nodes)));
        }
        Ok(())
    }
}

struct ValueSeed<'a> {
    budget: &'a Budget,
    depth: usize,
}

impl<'de> DeserializeSeed<'de> for ValueSeed<'_> {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if self.depth > self.budget.limits.max_depth {
            return Err(D::Error::custom(InputError::TooDeep(
                self.budget.limits.max_depth,
            )));
        }
        self.budget.count::<D::Error>()?;
        deserializer.deserialize_any(self)
    }
}

fn check_nul<E: serde::de::Error>(text: &str) -> Result<(), E> {
    if text.contains('\0') {
        Err(E::custom(InputError::Nul))
    } else {
        Ok(())
    }
}

impl<'de> Visitor<'de> for ValueSeed<'_> {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::Number(v.into()))
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Value, E> {
        Number::from_f64(v)
            .map(Value::Number)
            .ok_or_else(|| E::custom("input_not_json: not a finite number"))
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Value, E> {
        check_nul(v)?;
        Ok(Value::String(v.to_string()))
    }
    fn visit_string<E: serde::de::Error>(self, v: String) -> Result<Value, E> {
        check_nul(&v)?;
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut items = Vec::new();
        while let Some(item) = seq.next_element_seed(ValueSeed {
            budget: self.budget,
            depth: self.depth + 1,
        })? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut object = Map::new();
        let mut seen = HashSet::new();
        while let Some(key) = map.next_key::<String>()? {
            check_nul(&key)?;
            if !seen.insert(key.clone()) {
                return Err(A::Error::custom(InputError::DuplicateKey(key)));
            }
            let value = map.next_value_seed(ValueSeed {
                budget: self.budget,
                depth: self.depth + 1,
            })?;
            object.insert(key, value);
        }
        Ok(Value::Object(object))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(text: &str) -> &'static str {
        parse(text.as_bytes(), InputLimits::default())
            .unwrap_err()
            .rule()
    }

    #[test]
    fn canonical_form_sorts_keys_and_normalizes_numbers() {
        let input = parse(
            br#"{"b": 1.0, "a": [true, null, "\u00e9"], "c": 1e3}"#,
            InputLimits::default(),
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(input.canonical).unwrap(),
            r#"{"a":[true,null,"é"],"b":1,"c":1000}"#
        );
        assert!(input.digest.starts_with("sha256:") && input.digest.len() == 71);
    }

    #[test]
    fn bounds_are_enforced_while_parsing() {
        assert_eq!(
            rule(&format!("{}{}", "[".repeat(65), "]".repeat(65))),
            "input_too_deep"
        );
        assert!(
            parse(
                format!("{}{}", "[".repeat(64), "]".repeat(64)).as_bytes(),
                InputLimits::default()
            )
            .is_ok()
        );
        let nodes = format!("[{}]", vec!["0"; 100_000].join(","));
        assert_eq!(rule(&nodes), "input_too_many_nodes");
        assert_eq!(rule(r#"{"a": "x\u0000y"}"#), "input_contains_nul");
        assert_eq!(rule(r#"{"a\u0000": 1}"#), "input_contains_nul");
        assert_eq!(rule(r#"{"a": 1, "a": 2}"#), "input_duplicate_key");
        assert_eq!(rule(r#"{"a": 1"#), "input_not_json");
        assert_eq!(rule("1 2"), "input_not_json");
        let big = format!("\"{}\"", "x".repeat(1 << 20));
        assert_eq!(rule(&big), "input_too_large");
    }
}
