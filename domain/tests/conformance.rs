//! The service's canonicalization and schema validation against public corpora
//! (vendored under `tests/conformance`, licenses beside them): RFC 8785 vectors and
//! the JSON Schema Test Suite for draft 2020-12.

use domain::tasks::{input, schema};
use serde_json::Value;
use std::path::PathBuf;

fn corpus(path: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("tests/conformance")
        .join(path)
}

fn read_json(path: &str) -> Value {
    serde_json::from_slice(&std::fs::read(corpus(path)).unwrap()).unwrap()
}

#[test]
fn jcs_file_vectors_canonicalize_byte_for_byte() {
    let vectors = read_json("jcs/vectors.json");
    let mut checked = 0;
    for vector in vectors["vectors"].as_array().unwrap() {
        let (Some(input_file), Some(output_file)) =
            (vector["input"].as_str(), vector["output"].as_str())
        else {
            continue;
        };
        let text = std::fs::read(corpus(&format!("jcs/{input_file}"))).unwrap();
        let expected = std::fs::read(corpus(&format!("jcs/{output_file}"))).unwrap();
        let canonical = input::parse(&text, input::InputLimits::default())
            .unwrap()
            .canonical;
        assert_eq!(
            String::from_utf8_lossy(&canonical),
            String::from_utf8_lossy(&expected),
            "{input_file}"
        );
        checked += 1;
    }
    assert!(checked >= 6, "every file pair is checked");
}

#[test]
fn jcs_number_serialization_matches_appendix_b() {
    let numbers = read_json("jcs/numbers.json");
    let mut checked = 0;
    for vector in numbers["vectors"].as_array().unwrap() {
        let bits = u64::from_str_radix(vector["ieee754"].as_str().unwrap(), 16).unwrap();
        let value = f64::from_bits(bits);
        let expected = vector["expected"].as_str().unwrap();
        if !value.is_finite() {
            continue;
        }
        let text = format!("[{value:e}]");
        let canonical = input::parse(text.as_bytes(), input::InputLimits::default())
            .unwrap()
            .canonical;
        assert_eq!(
            String::from_utf8(canonical).unwrap(),
            format!("[{expected}]"),
            "{}",
            vector["comment"]
        );
        checked += 1;
    }
    assert!(checked > 10);
}

#[test]
fn json_schema_test_suite_draft_2020_12() {
    let manifest = read_json("jsonschema/manifest.json");
    let (mut passed, mut refused_schemas) = (0, 0);
    for group in manifest["groups"].as_array().unwrap() {
        let policy = group["policy"].as_str().unwrap();
        if policy == "remote_ref" {
            continue;
        }
        let file = read_json(&format!(
            "jsonschema/draft2020-12/{}",
            group["file"].as_str().unwrap()
        ));
        let case = &file[group["group"].as_u64().unwrap() as usize];
        let validator = match schema::compile(&case["schema"]) {
            Ok(validator) => validator,
            Err(problems) => {
                assert!(
                    policy == "non_object" || policy == "nul_in_schema",
                    "{}: {problems:?}",
                    group["description"]
                );
                refused_schemas += 1;
                continue;
            }
        };
        for test in case["tests"].as_array().unwrap() {
            let expected = test["valid"].as_bool().unwrap();
            let valid = schema::violations(&validator, &test["data"]).is_empty();
            assert_eq!(
                valid, expected,
                "{} / {}",
                group["description"], test["description"]
            );
            passed += 1;
        }
    }
    assert!(passed > 1000, "{passed} cases checked");
    assert!(refused_schemas <= 4);
}
