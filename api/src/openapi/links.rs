//! OpenAPI links from each creating operation to the operations that use what it
//! created, so a client (or a fuzzer's stateful phase) can follow `POST
//! /tables` → `GET /tables/{table_id}` → `POST /tables/{table_id}/columns` → ...
//! without knowing the API. The rule: a `POST` on a collection path creates the
//! member addressed by the collection path plus `/{name}`; the new id is the
//! answer's `id` (or its `name` field, e.g. `run_id`). Every other path parameter
//! of the target is one the creating request had, passed on as
//! `$request.path.<name>`.

use serde_json::{Map, Value, json};

/// The `{name}`s of a path.
fn parameters(path: &str) -> Vec<&str> {
    path.split('/')
        .filter_map(|s| s.strip_prefix('{')?.strip_suffix('}'))
        .collect()
}

/// A JSON pointer token (`/` and `~` escaped).
fn pointer_token(text: &str) -> String {
    text.replace('~', "~0").replace('/', "~1")
}

/// The properties of the creating operation's success answer.
fn answer_fields(document: &Value, post: &Value) -> Vec<String> {
    let responses = &post["responses"];
    let Some(content) = ["201", "200", "202"]
        .iter()
        .map(|status| &responses[*status]["content"]["application/json"]["schema"])
        .find(|schema| !schema.is_null())
    else {
        return Vec::new();
    };
    let schema = match content["$ref"].as_str() {
        Some(target) => target
            .strip_prefix("#/components/schemas/")
            .map_or(&Value::Null, |name| {
                &document["components"]["schemas"][name]
            }),
        None => content,
    };
    schema["properties"]
        .as_object()
        .map(|properties| properties.keys().cloned().collect())
        .unwrap_or_default()
}

/// The link to one target operation, when every parameter it needs is known.
fn link(creator: &str, target: &str, method: &str, name: &str, field: &str) -> Option<Value> {
    let known = parameters(creator);
    let mut values = Map::new();
    for parameter in parameters(target) {
        let value = if parameter == name {
            format!("$response.body#/{field}")
        } else if known.contains(&parameter) {
            format!("$request.path.{parameter}")
        } else {
            return None;
        };
        values.insert(parameter.to_string(), Value::String(value));
    }
    Some(json!({
        "operationRef": format!("#/paths/{}/{method}", pointer_token(target)),
        "parameters": values,
    }))
}

/// Adds the links to every creating operation of the document.
pub fn add(document: &mut Value) {
    let Some(paths) = document["paths"].as_object() else {
        return;
    };
    let mut additions: Vec<(String, String, String, Value)> = Vec::new();
    for (creator, item) in paths {
        let Some(post) = item.get("post") else {
            continue;
        };
        let fields = answer_fields(document, post);
        let Some(status) = ["201", "200", "202"]
            .into_iter()
            .find(|s| !post["responses"][*s].is_null())
        else {
            continue;
        };
        for (target, operations) in paths {
            let Some(rest) = target.strip_prefix(&format!("{creator}/{{")) else {
                continue;
            };
            let Some((name, _)) = rest.split_once('}') else {
                continue;
            };
            let Some(field) = ["id", name]
                .into_iter()
                .find(|f| fields.iter().any(|x| x == f))
            else {
                continue;
            };
            for method in ["get", "put", "patch", "delete", "post"] {
                if operations.get(method).is_none() {
                    continue;
                }
                if let Some(value) = link(creator, target, method, name, field) {
                    let tail = &target[creator.len()..];
                    let link_name = format!("{method}{}", tail.replace(['{', '}'], ""))
                        .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
                    additions.push((creator.clone(), status.to_string(), link_name, value));
                }
            }
        }
    }
    for (creator, status, name, value) in additions {
        let response = &mut document["paths"][&creator]["post"]["responses"][&status];
        if let Some(response) = response.as_object_mut() {
            let links = response.entry("links").or_insert_with(|| json!({}));
            links[name] = value;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::link;

    #[test]
    fn a_member_route_takes_the_new_id_and_the_creating_path() {
        let value = link(
            "/t/{table_id}/columns",
            "/t/{table_id}/columns/{column_id}",
            "get",
            "column_id",
            "id",
        )
        .unwrap();
        assert_eq!(value["parameters"]["column_id"], "$response.body#/id");
        assert_eq!(value["parameters"]["table_id"], "$request.path.table_id");
        assert_eq!(
            value["operationRef"],
            "#/paths/~1t~1{table_id}~1columns~1{column_id}/get"
        );
    }
}
