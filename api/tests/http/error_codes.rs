//! Every error code is accounted for: `error_codes.json` names, per code of
//! `domain::codes::Code`, the test that produces it, or why none does (not built
//! yet, or produced where no test can reach). The specs' error tables
//! (`../shared/spec/*.md`, section 7) are walked when present: each code they name
//! must be a typed variant.

use domain::codes::Code;
use serde_json::Value;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

const REGISTRY: &str = include_str!("error_codes.json");

/// The sources where named tests must exist.
fn test_sources() -> Vec<(PathBuf, String)> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let mut out = Vec::new();
    let mut stack = vec![
        root.join("api/tests"),
        root.join("projections/tests"),
        root.join("domain/src"),
    ];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).unwrap();
                out.push((path, text));
            }
        }
    }
    out
}

/// The body of `fn name(` in a source, up to the next test attribute.
fn test_body<'a>(source: &'a str, name: &str) -> Option<&'a str> {
    let start = source.find(&format!("fn {name}("))?;
    let rest = &source[start..];
    let end = rest[1..].find("#[").map_or(rest.len(), |i| i + 1);
    Some(&rest[..end])
}

/// The backticked snake_case words of a spec's section 7.
fn spec_codes(spec: &str) -> BTreeSet<String> {
    let start = spec.find("## 7. Errors").expect("a section 7");
    let end = spec[start..]
        .find("## 8.")
        .map_or(spec.len(), |i| start + i);
    spec[start..end]
        .split('`')
        .skip(1)
        .step_by(2)
        .filter(|w| {
            w.chars().next().is_some_and(|c| c.is_ascii_lowercase())
                && w.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        })
        .map(String::from)
        .collect()
}

#[test]
fn every_code_is_produced_by_a_named_test_or_says_why_not() {
    let registry: Value = serde_json::from_str(REGISTRY).unwrap();
    let codes = registry["codes"].as_object().unwrap();
    let sources = test_sources();
    let (mut tested, mut untested, mut not_built) = (Vec::new(), Vec::new(), Vec::new());
    for code in Code::ALL {
        let entry = &codes
            .get(code.as_str())
            .unwrap_or_else(|| panic!("{code} has no entry in error_codes.json"));
        if let Some(test) = entry["test"].as_str() {
            let produces = sources.iter().any(|(_, source)| {
                test_body(source, test).is_some_and(|body| {
                    body.contains(&format!("\"{code}\"")) || body.contains(&format!("{code:?}"))
                })
            });
            assert!(produces, "{code}: the test {test} does not name the code");
            tested.push(format!("{code}: {test}"));
        } else if let Some(why) = entry["untested"].as_str() {
            untested.push(format!("{code}: {why}"));
        } else if let Some(why) = entry["not_built"].as_str() {
            not_built.push(format!("{code}: {why}"));
        } else {
            panic!("{code}: name a test, or say why it is untested or not built");
        }
    }
    for name in codes.keys() {
        assert!(Code::parse(name).is_some(), "{name} is not a code any more");
    }
    println!(
        "produced and tested ({}):\n  {}",
        tested.len(),
        tested.join("\n  ")
    );
    println!(
        "produced, untested ({}):\n  {}",
        untested.len(),
        untested.join("\n  ")
    );
    println!(
        "not built yet ({}):\n  {}",
        not_built.len(),
        not_built.join("\n  ")
    );
}

#[test]
fn every_code_of_the_specs_error_tables_is_a_typed_variant() {
    let registry: Value = serde_json::from_str(REGISTRY).unwrap();
    let not_codes = registry["not_codes"].as_object().unwrap();
    let specs = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared/spec");
    let mut walked = 0;
    for name in ["sandbox-service.md", "custom-tables.md"] {
        // The specs live beside the repository; a clone without them checks the
        // registry alone (the other test).
        let Ok(spec) = std::fs::read_to_string(specs.join(name)) else {
            continue;
        };
        for word in spec_codes(&spec) {
            if not_codes.contains_key(&word) {
                continue;
            }
            assert!(
                Code::parse(&word).is_some(),
                "{name} names the code {word}, which is no Code variant"
            );
            walked += 1;
        }
    }
    println!("{walked} codes of the specs' error tables are typed variants");
}

/// The words of a refusal's description that look like codes (`snake_case`).
fn named_codes(answer: &str) -> impl Iterator<Item = &str> {
    answer
        .split(|c: char| !(c.is_ascii_lowercase() || c == '_' || c.is_ascii_digit()))
        .filter(|word| word.contains('_') && !word.starts_with('_') && !word.ends_with('_'))
}

#[tokio::test]
async fn every_documented_refusal_names_real_codes_and_a_real_route() {
    use api::openapi::refusals::{REFUSALS, route_of};
    let app = crate::support::TestApp::spawn().await;
    let request = app.request(reqwest::Method::GET, "/openapi.json");
    let (status, doc) = crate::support::json(request.send().await.unwrap()).await;
    assert_eq!(status, 200);
    let mut documented: BTreeSet<(String, String)> = BTreeSet::new();
    for (path, item) in doc["paths"].as_object().expect("paths") {
        let (area, route) = route_of(path);
        for (method, operation) in item.as_object().unwrap() {
            let key = format!("{} {route}", method.to_uppercase());
            documented.insert((area.to_string(), key.clone()));
            let refusals = REFUSALS.get(area).and_then(|r| r.get(&key));
            for (status, answer) in refusals.into_iter().flatten() {
                assert_eq!(
                    operation["responses"][status]["description"], *answer,
                    "{path} {method}: the document carries refusal {status}"
                );
            }
        }
    }
    for (area, routes) in REFUSALS.iter() {
        for (route, refusals) in routes {
            assert!(
                documented.contains(&(area.clone(), route.clone())),
                "refusals.json names {area} {route}, which is not a route"
            );
            for (status, answer) in refusals {
                assert!(status.parse::<u16>().is_ok_and(|s| (400..600).contains(&s)));
                for code in named_codes(answer) {
                    assert!(
                        Code::parse(code).is_some(),
                        "{area} {route} {status} names `{code}`, which is no error code"
                    );
                }
            }
        }
    }
}
