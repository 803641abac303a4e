//! (d) of `bench tables`: a filtered, sorted page of 50 over a table of as many
//! records as the main one, each linking three of 10,000 parts (and one main part),
//! with two rollups over the links, one lookup and two formulas. The computed
//! columns are read by the page's one statement; this measures what they add.

use super::server::Server;
use super::stats::p50_p95;
use super::tables::{create_table, fill, fill_with};
use anyhow::Context;
use projections::read_models::tables::table_name;
use serde_json::{Value, json};
use uuid::Uuid;

/// Records of the linked table.
pub const LINKED: usize = 10_000;

/// The page latencies.
pub struct Figures {
    /// Median, milliseconds.
    pub p50_ms: f64,
    /// 95th percentile, milliseconds.
    pub p95_ms: f64,
}

async fn column(
    server: &Server,
    client: &reqwest::Client,
    table: Uuid,
    body: Value,
) -> anyhow::Result<String> {
    let created = server
        .call(
            client,
            reqwest::Method::POST,
            &format!("/tables/{table}/columns"),
            body,
        )
        .await?;
    Ok(created["column"]["id"]
        .as_str()
        .with_context(|| format!("column not created: {created}"))?
        .to_string())
}

/// Builds the two tables and measures `pages` page requests.
pub async fn measure(
    server: &Server,
    client: &reqwest::Client,
    records: usize,
    pages: usize,
) -> anyhow::Result<Figures> {
    let (parts, part_keys) = create_table(server, client, "parts").await?;
    fill(server, parts, &part_keys, LINKED).await?;
    let ids: Vec<Uuid> = sqlx::query_scalar(&format!(
        "SELECT id FROM {} ORDER BY created_at, id",
        table_name(parts)
    ))
    .fetch_all(&server.state.pool)
    .await?;
    let table = server
        .call(
            client,
            reqwest::Method::POST,
            "/tables",
            json!({"name": "orders"}),
        )
        .await?;
    let orders: Uuid = table["id"].as_str().context("table id")?.parse()?;
    let qty = column(
        server,
        client,
        orders,
        json!({"name": "qty", "type": "integer"}),
    )
    .await?;
    let price = column(
        server,
        client,
        orders,
        json!({"name": "price", "type": "float"}),
    )
    .await?;
    let links = column(
        server,
        client,
        orders,
        json!({"name": "parts", "type": "link", "target_table_id": parts}),
    )
    .await?;
    let main = column(
        server,
        client,
        orders,
        json!({"name": "main", "type": "link", "cardinality": "one", "target_table_id": parts}),
    )
    .await?;
    let n = ids.len();
    fill_with(server, orders, records, |i| {
        json!({
            qty.as_str(): i % 100,
            price.as_str(): (i % 1000) as f64 / 10.0,
            links.as_str(): [ids[i % n], ids[(i * 7 + 1) % n], ids[(i * 13 + 2) % n]],
            main.as_str(): [ids[(i * 3) % n]],
        })
    })
    .await?;
    for body in [
        json!({"name": "part count", "type": "rollup", "link_field": "parts", "aggregation": "count"}),
        json!({"name": "part qty", "type": "rollup", "link_field": "parts", "aggregation": "sum",
               "target_column": part_keys[1]}),
        json!({"name": "main name", "type": "lookup", "link_field": "main", "target_column": part_keys[0]}),
        json!({"name": "value", "type": "formula", "expression": "[qty] * [price]"}),
        json!({"name": "large", "type": "formula", "expression": "IF([qty] > 50, [price] * 2, [price] / 2)"}),
    ] {
        column(server, client, orders, body).await?;
    }
    let search = json!({"filter": {"column": "qty", "op": "gte", "value": 10},
                        "sort": [{"column": "qty", "order": "asc"}], "limit": 50});
    let path = format!("/tables/{orders}/records/search");
    let (p50_ms, p95_ms) = p50_p95(pages, || async {
        let page = server
            .call(client, reqwest::Method::POST, &path, search.clone())
            .await?;
        let first = &page["records"][0]["data"];
        anyhow::ensure!(
            page["records"].as_array().map(Vec::len) == Some(50)
                && first["part count"].as_i64() >= Some(1),
            "a page holds 50 records with their computed columns: {first}"
        );
        Ok(())
    })
    .await?;
    Ok(Figures { p50_ms, p95_ms })
}
