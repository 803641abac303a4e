//! Row policies over HTTP (spec section 2, "Row policy"): every operator, group,
//! link leaf and token, read by a member, a department manager, a room member and a
//! social media client through their grants, while the table manager reads every
//! row; authoring errors name the node; anything unresolvable narrows.

use super::fixture::Tables;
use chrono::{Duration, Utc};
use reqwest::Method;
use serde_json::{Value, json};
use std::collections::BTreeSet;

/// The callers a policy narrows (the table manager `boss` reads every row).
const CALLERS: [&str; 4] = ["member", "dm", "roamer", "line1"];
const ALL: &str = "ABCDE";

struct Policies {
    t: Tables,
    table: String,
    keys: Vec<(String, String)>,
}

impl Policies {
    async fn new() -> Self {
        let t = Tables::with_cast().await;
        let target = t.table("company", "boss", "targets").await;
        let target_id = target.rsplit('/').next().unwrap().to_string();
        t.column(&target, json!({"name": "score", "type": "integer"}))
            .await;
        let t1 = t.record(&target, json!({"score": 10})).await["id"].clone();
        let t2 = t.record(&target, json!({"score": 2})).await["id"].clone();
        let table = t.table("company", "boss", "policies").await;
        for column in [
            json!({"name": "label", "type": "string"}),
            json!({"name": "n", "type": "integer"}),
            json!({"name": "s", "type": "string"}),
            json!({"name": "d", "type": "date"}),
            json!({"name": "t", "type": "datetime"}),
            json!({"name": "owner", "type": "principal"}),
            json!({"name": "ref", "type": "link", "target_table_id": target_id}),
        ] {
            t.column(&table, column).await;
        }
        let today = Utc::now().date_naive();
        let day = |offset: i64| (today + Duration::days(offset)).to_string();
        let user = |name: &str| format!("user:{}", t.user(name));
        let lab = format!("room:{}", t.seed.room("acme", "lab"));
        let client = format!("smc:{}", t.client());
        let hour_ago = (Utc::now() - Duration::hours(1)).to_rfc3339();
        let rows = [
            json!({"label": "A", "n": 1, "s": "apple", "d": day(0), "owner": user("member"), "ref": [t1]}),
            json!({"label": "B", "n": 5, "s": "banana", "d": day(-10), "owner": lab, "ref": [t1, t2]}),
            json!({"label": "C", "ref": []}),
            json!({"label": "D", "n": 9, "s": "cherry", "d": day(3), "owner": client, "ref": [t2]}),
            json!({"label": "E", "n": 5, "s": "Apple pie", "d": day(-1), "t": hour_ago, "owner": user("dm")}),
        ];
        for row in rows {
            t.record(&table, row).await;
        }
        let mut keys = Vec::new();
        for name in ["n", "s", "d", "t", "owner", "ref"] {
            keys.push((format!("${name}"), t.column_key(&table, name).await));
        }
        keys.push(("$score".into(), t.column_key(&target, "score").await));
        Self { t, table, keys }
    }

    /// The policy with `$name` placeholders replaced by internal keys.
    fn policy(&self, policy: Value) -> Value {
        let mut text = policy.to_string();
        for (placeholder, key) in &self.keys {
            text = text.replace(&format!("\"{placeholder}\""), &format!("\"{key}\""));
        }
        serde_json::from_str(&text).unwrap()
    }

    /// Gives every caller's grant this row policy: the default grant (member, dm,
    /// roamer) and the client grant (line1).
    async fn grant(&self, policy: &Value) {
        let body = json!({"can_read": "filtered", "row_filter": self.policy(policy.clone())});
        let (status, answer) = self
            .t
            .call(
                Method::PATCH,
                &format!("{}/default-permissions", self.table),
                "boss",
                Some(body.clone()),
            )
            .await;
        assert_eq!(status, 200, "{policy}: {answer}");
        let path = format!("{}/client-permissions/{}", self.table, self.t.client());
        let (status, answer) = self.t.call(Method::PUT, &path, "boss", Some(body)).await;
        assert_eq!(status, 200, "{policy}: {answer}");
    }

    async fn rows(&self, caller: &str) -> String {
        let (status, page) = self
            .t
            .call(
                Method::GET,
                &format!("{}/records?limit=100", self.table),
                caller,
                None,
            )
            .await;
        assert_eq!(status, 200, "{caller}: {page}");
        let labels: BTreeSet<String> = page["records"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["data"]["label"].as_str().unwrap().to_string())
            .collect();
        labels.into_iter().collect()
    }

    /// Checks the rows of every caller (`expected` per caller in [`CALLERS`] order).
    async fn check(&self, policy: Value, expected: [&str; 4]) {
        self.grant(&policy).await;
        for (caller, rows) in CALLERS.iter().zip(expected) {
            assert_eq!(self.rows(caller).await, rows, "{caller} under {policy}");
        }
        assert_eq!(
            self.rows("boss").await,
            ALL,
            "the table manager under {policy}"
        );
    }

    /// The same rows for every caller.
    async fn same(&self, policy: Value, rows: &str) {
        self.check(policy, [rows; 4]).await;
    }
}

#[tokio::test]
async fn every_operator_narrows_every_caller_kind() {
    let p = Policies::new().await;
    let cases = [
        (json!({"column": "$n", "op": "eq", "value": 5}), "BE"),
        (json!({"column": "$n", "op": "neq", "value": 5}), "AD"),
        (
            json!({"not": {"column": "$n", "op": "eq", "value": 5}}),
            "ACD",
        ),
        (json!({"column": "$n", "op": "gt", "value": 4}), "BDE"),
        (json!({"column": "$n", "op": "gte", "value": 9}), "D"),
        (json!({"column": "$n", "op": "lt", "value": 5}), "A"),
        (json!({"column": "$n", "op": "lte", "value": 5}), "ABE"),
        (json!({"column": "$n", "op": "in", "value": [1, 9]}), "AD"),
        (
            json!({"column": "$s", "op": "contains", "value": "app"}),
            "AE",
        ),
        (json!({"column": "$n", "op": "is_null"}), "C"),
        (json!({"column": "$n", "op": "is_not_null"}), "ABDE"),
        (
            json!({"and": [{"column": "$n", "op": "gte", "value": 5}, {"column": "$s", "op": "contains", "value": "an"}]}),
            "B",
        ),
        (
            json!({"or": [{"column": "$n", "op": "eq", "value": 1}, {"column": "$n", "op": "eq", "value": 9}]}),
            "AD",
        ),
        (
            json!({"not": {"or": [{"column": "$s", "op": "contains", "value": "a"}, {"column": "$n", "op": "gt", "value": 8}]}}),
            "C",
        ),
    ];
    for (policy, rows) in cases {
        p.same(policy, rows).await;
    }
}

#[tokio::test]
async fn date_tokens_follow_today_and_now() {
    let p = Policies::new().await;
    let cases = [
        (
            json!({"column": "$d", "op": "gte", "value": "$today"}),
            "AD",
        ),
        (
            json!({"column": "$d", "op": "lt", "value": "$today-5d"}),
            "B",
        ),
        (
            json!({"and": [{"column": "$d", "op": "gt", "value": "$today"}, {"column": "$d", "op": "lte", "value": "$today+3d"}]}),
            "D",
        ),
        (
            json!({"column": "$d", "op": "in", "value": ["$today", "$today-1d"]}),
            "AE",
        ),
        (json!({"column": "$t", "op": "lt", "value": "$now"}), "E"),
    ];
    for (policy, rows) in cases {
        p.same(policy, rows).await;
    }
}

#[tokio::test]
async fn link_leaves_follow_one_hop() {
    let p = Policies::new().await;
    let high = json!({"column": "$score", "op": "gte", "value": 10});
    let cases = [
        (
            json!({"link": "$ref", "quantifier": "any", "target": high}),
            "AB",
        ),
        (
            json!({"link": "$ref", "quantifier": "all", "require_present": false, "target": high}),
            "ACE",
        ),
        (
            json!({"link": "$ref", "quantifier": "all", "require_present": true, "target": high}),
            "A",
        ),
        (
            json!({"not": {"link": "$ref", "quantifier": "any", "target": high}}),
            "CDE",
        ),
    ];
    for (policy, rows) in cases {
        p.same(policy, rows).await;
    }
}

#[tokio::test]
async fn me_tokens_resolve_per_caller_and_fail_closed() {
    let p = Policies::new().await;
    // Owners: A user:member, B room:lab, C blank, D smc:line1, E user:dm. `$me` is the
    // caller and its live rooms; `$me.department` the members and rooms of its
    // departments (roamer and the client have none: the empty set fails closed).
    p.check(
        json!({"column": "$owner", "op": "eq", "value": "$me"}),
        ["AB", "BE", "B", "BD"],
    )
    .await;
    p.check(
        json!({"column": "$owner", "op": "neq", "value": "$me"}),
        ["DE", "AD", "ADE", "AE"],
    )
    .await;
    p.check(
        json!({"column": "$owner", "op": "in", "value": ["$me.department"]}),
        ["ABE", "ABE", "", ""],
    )
    .await;
    p.check(
        json!({"not": {"column": "$owner", "op": "eq", "value": "$me.department"}}),
        ["CD", "CD", "", ""],
    )
    .await;
}

#[tokio::test]
async fn an_unresolvable_policy_narrows_even_under_not() {
    let p = Policies::new().await;
    p.same(
        json!({"not": {"column": "$s", "op": "eq", "value": "apple"}}),
        "BCDE",
    )
    .await;
    let s = p.keys.iter().find(|(k, _)| k == "$s").unwrap().1.clone();
    let (status, body) =
        p.t.call(
            Method::DELETE,
            &format!("{}/columns/{s}", p.table),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 200, "{body}");
    for caller in CALLERS {
        assert_eq!(
            p.rows(caller).await,
            "",
            "{caller}: a deleted column narrows"
        );
    }
    assert_eq!(p.rows("boss").await, ALL);
}

#[tokio::test]
async fn authoring_errors_name_the_node() {
    let p = Policies::new().await;
    let path = format!("{}/default-permissions", p.table);
    let cases = [
        (
            json!({"and": [{"column": "$n", "op": "eq", "value": "x"}]}),
            "$.and[0]",
        ),
        (
            json!({"column": "n", "op": "eq", "value": 1}),
            "unknown column",
        ),
        (
            json!({"column": "$ref", "op": "eq", "value": 1}),
            "stored scalar",
        ),
        (
            json!({"column": "$n", "op": "contains", "value": "1"}),
            "does not apply",
        ),
        (
            json!({"link": "$ref", "quantifier": "all", "target": {"column": "$score", "op": "is_null"}}),
            "require_present",
        ),
        (
            json!({"link": "$ref", "op": "contains", "value": "x"}),
            "membership leaf",
        ),
        (
            json!({"column": "$owner", "op": "eq", "value": "user"}),
            "$",
        ),
        (
            json!({"column": "$s", "op": "eq", "value": "$me"}),
            "principal columns",
        ),
        (
            json!({"not": {"not": {"not": {"not": {"not": {"column": "$n", "op": "is_null"}}}}}}),
            "deeper than 5",
        ),
        (
            json!({"or": vec![json!({"column": "$n", "op": "is_null"}); 25]}),
            "more than 24 predicates",
        ),
        (
            json!({"column": "$n", "op": "in", "value": (0..101).collect::<Vec<i64>>()}),
            "at most 100 entries",
        ),
        (
            json!({"or": vec![json!({"link": "$ref", "quantifier": "any",
                                     "target": {"column": "$score", "op": "is_null"}}); 7]}),
            "more than 6 link leaves",
        ),
    ];
    for (policy, message) in cases {
        let body = json!({"can_read": "filtered", "row_filter": p.policy(policy.clone())});
        let (status, answer) = p.t.call(Method::PATCH, &path, "boss", Some(body)).await;
        assert_eq!(status, 400, "{policy}: {answer}");
        let text = answer["detail"]["message"].as_str().unwrap_or_default();
        assert!(text.contains(message), "{policy}: {text}");
    }
    let (status, grant) =
        p.t.call(
            Method::GET,
            &format!("{}/permissions", p.table),
            "boss",
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        grant["default"]["can_read"], "all",
        "a refused grant changed nothing"
    );
}
