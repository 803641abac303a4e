//! Unique operation ids. The custom-table routes are mounted three or five times
//! (company, department, chatroom, with and without the scope id), and a few
//! sandbox handlers share a name across areas, so the ids utoipa takes from the
//! handler names repeat; OpenAPI requires them unique, and generated clients name
//! their methods after them. A repeated id gets the path segments that tell its
//! operations apart: `create_table_company`, `create_table_chatroom_by_chatroom_id`.

use std::collections::BTreeMap;
use utoipa::openapi::OpenApi;

/// A path's segments as words: literals as they are, `{name}` as `by_name`.
fn words(path: &str) -> Vec<String> {
    path.split('/')
        .filter(|s| !s.is_empty())
        .map(
            |s| match s.strip_prefix('{').and_then(|s| s.strip_suffix('}')) {
                Some(name) => format!("by_{name}"),
                None => s.replace('-', "_"),
            },
        )
        .collect()
}

/// What sets each path of a group apart: its words without the prefix and the
/// suffix every path of the group shares.
fn distinguishing(paths: &[&str]) -> Vec<String> {
    let all: Vec<Vec<String>> = paths.iter().map(|p| words(p)).collect();
    let shortest = all.iter().map(Vec::len).min().unwrap_or(0);
    let prefix = (0..shortest)
        .take_while(|&i| all.iter().all(|w| w[i] == all[0][i]))
        .count();
    let suffix = (0..shortest - prefix)
        .take_while(|&i| {
            all.iter()
                .all(|w| w[w.len() - 1 - i] == all[0][all[0].len() - 1 - i])
        })
        .count();
    all.iter()
        .map(|w| w[prefix..w.len() - suffix].join("_"))
        .collect()
}

/// Renames every repeated operation id.
pub fn make_unique(document: &mut OpenApi) {
    let mut operations = super::operations_mut(document);
    let mut groups: BTreeMap<String, Vec<usize>> = BTreeMap::new();
    for (index, (_, _, operation)) in operations.iter().enumerate() {
        if let Some(id) = &operation.operation_id {
            groups.entry(id.clone()).or_default().push(index);
        }
    }
    for (id, members) in groups.into_iter().filter(|(_, m)| m.len() > 1) {
        let paths: Vec<&str> = members.iter().map(|&i| operations[i].0).collect();
        let suffixes = distinguishing(&paths);
        for (&index, suffix) in members.iter().zip(suffixes) {
            let (_, method, operation) = &mut operations[index];
            operation.operation_id = Some(match suffix.is_empty() {
                true => format!("{id}_{method}"),
                false => format!("{id}_{suffix}"),
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::distinguishing;

    #[test]
    fn the_mounts_tell_repeated_operations_apart() {
        let paths = [
            "/p/company/tables/{table_id}",
            "/p/chatroom/tables/{table_id}",
            "/p/chatroom/{chatroom_id}/tables/{table_id}",
        ];
        assert_eq!(
            distinguishing(&paths),
            ["company", "chatroom", "chatroom_by_chatroom_id"]
        );
    }
}
