//! The pricing envelope: while a company has a budget, each new run holds the most
//! it can cost against the current window; the spec's pricing refusals
//! (`missing_window`, `no_active_region`, `missing_price`, `invalid_envelope`,
//! `budget_reservation_exceeded`) create nothing; the settings show the window.

use super::{runnable, submit};
use crate::environments::callers;
use crate::support::{TestApp, assert_code};
use crate::tasks::ready_environment_version;
use chrono::{Duration, Utc};
use domain::pricing::{Budget, PRICE_LIST, Pricing, PricingCommand, RegionPrice};
use domain::principal::{Actor, EventMetadata};
use serde_json::json;
use uuid::Uuid;

pub(super) async fn operator(app: &TestApp, aggregate: &str, command: PricingCommand) {
    let meta = EventMetadata {
        actor: Actor::Operator("test".into()),
        company_id: None,
        request_id: "test".into(),
        time: Utc::now(),
    };
    app.state
        .bus
        .execute::<Pricing>(aggregate, command, &meta)
        .await
        .unwrap();
}

fn price(currency: &str, vcpu_second_micros: i64) -> PricingCommand {
    PricingCommand::SetPrice(RegionPrice {
        region: "onprem".into(),
        currency: currency.into(),
        vcpu_second_micros,
        memory_gib_second_micros: 0,
    })
}

async fn runs_of(app: &TestApp, company: Uuid) -> i64 {
    sqlx::query_scalar("SELECT count(*) FROM runs WHERE company_id = $1")
        .bind(company)
        .fetch_one(&app.db.pool)
        .await
        .unwrap()
}

#[tokio::test]
async fn a_budget_holds_each_run_s_envelope_and_refuses_what_does_not_fit() {
    // Runs stay queued: what they hold stays held.
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "true\n", json!({})).await;
    let run = json!({"task_version_id": version, "input": {}});
    let company: Uuid = boss.get("/me").await.1["company_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    let key = company.to_string();

    // No budget, no prices: unmetered.
    let (status, settings) = boss.get("/settings").await;
    assert_eq!((status, &settings["pricing"]), (200, &json!(null)));
    assert_eq!(submit(&member, &lab, "free", run.clone()).await.0, 200);

    // A budget of 0.1 USD per 30 days whose first window has not begun.
    let budget = |starts_at| {
        PricingCommand::SetBudget(Budget {
            company_id: company,
            currency: "USD".into(),
            amount_micros: 100_000,
            window_days: 30,
            starts_at,
        })
    };
    operator(&app, &key, budget(Utc::now() + Duration::days(1))).await;
    let before = runs_of(&app, company).await;
    assert_code(
        &submit(&member, &lab, "k1", run.clone()).await,
        422,
        "missing_window",
    );
    operator(&app, &key, budget(Utc::now() - Duration::hours(1))).await;
    assert_code(
        &submit(&member, &lab, "k2", run.clone()).await,
        422,
        "missing_price",
    );
    operator(&app, PRICE_LIST, price("EUR", 1000)).await;
    assert_code(
        &submit(&member, &lab, "k3", run.clone()).await,
        422,
        "invalid_envelope",
    );
    sqlx::query(
        "UPDATE company_settings SET allowed_regions = '{asia-east1}' WHERE company_id = $1",
    )
    .bind(company)
    .execute(&app.db.pool)
    .await
    .unwrap();
    assert_code(
        &submit(&member, &lab, "k4", run.clone()).await,
        422,
        "no_active_region",
    );
    sqlx::query("UPDATE company_settings SET allowed_regions = '{onprem}' WHERE company_id = $1")
        .bind(company)
        .execute(&app.db.pool)
        .await
        .unwrap();
    assert_eq!(
        runs_of(&app, company).await,
        before,
        "no refusal created a run"
    );

    // 0.001 USD a vCPU-second: a 60-second standard run (1 vCPU) holds 0.06.
    operator(&app, PRICE_LIST, price("USD", 1000)).await;
    let (status, held) = submit(&member, &lab, "k5", run.clone()).await;
    assert_eq!(status, 200, "{held}");
    let (_, settings) = boss.get("/settings").await;
    let window = &settings["pricing"]["budget"];
    assert_eq!(
        (window["reserved"].as_f64(), window["available"].as_f64()),
        (Some(0.06), Some(0.04)),
        "{settings}"
    );
    assert_eq!(settings["pricing"]["regions"][0]["placeable"], true);

    // A second one does not fit: refused, nothing created.
    let before = runs_of(&app, company).await;
    let (status, refused) = submit(&member, &lab, "k6", run.clone()).await;
    let detail = assert_code(&(status, refused), 403, "budget_reservation_exceeded");
    assert_eq!(detail["envelope"], 0.06);
    assert_eq!(runs_of(&app, company).await, before);

    // The first ends without running: it costs nothing and frees its hold.
    let id = held["id"].as_str().unwrap();
    let path = format!("/chatrooms/{lab}/runs/{id}/cancel");
    assert_eq!(member.post(&path, json!({})).await.0, 200);
    assert_eq!(submit(&member, &lab, "k7", run.clone()).await.0, 200);

    // Without the budget, runs are unmetered again.
    operator(
        &app,
        &key,
        PricingCommand::ClearBudget {
            company_id: company,
        },
    )
    .await;
    assert_eq!(submit(&member, &lab, "k8", run).await.0, 200);
    let (_, settings) = boss.get("/settings").await;
    assert_eq!(settings["pricing"]["budget"], json!(null));
}

#[tokio::test]
async fn concurrent_submissions_never_hold_more_than_the_budget() {
    // However submissions arriving together are serialized or grouped, each
    // hold counts against the next one's check.
    let app = TestApp::without_executor().await;
    let (seed, boss, _, member) = callers(&app).await;
    let lab = seed.room("acme", "lab").to_string();
    let ready = ready_environment_version(&boss).await;
    let (_, version) = runnable(&boss, &ready, "true\n", json!({})).await;
    let company: Uuid = boss.get("/me").await.1["company_id"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    // 1 USD; a 60-second standard run holds 0.06, so 16 fit and the 17th does not.
    let budget = PricingCommand::SetBudget(Budget {
        company_id: company,
        currency: "USD".into(),
        amount_micros: 1_000_000,
        window_days: 30,
        starts_at: Utc::now() - Duration::hours(1),
    });
    operator(&app, &company.to_string(), budget).await;
    operator(&app, PRICE_LIST, price("USD", 1000)).await;
    let run = json!({"task_version_id": version, "input": {}});
    let keys: Vec<String> = (0..30).map(|i| format!("together-{i}")).collect();
    let attempts = futures::future::join_all(
        keys.iter()
            .map(|key| submit(&member, &lab, key, run.clone())),
    )
    .await;
    let accepted = attempts.iter().filter(|(s, _)| *s == 200).count();
    assert_eq!(accepted, 16, "{attempts:?}");
    for attempt in attempts.iter().filter(|(s, _)| *s != 200) {
        assert_code(attempt, 403, "budget_reservation_exceeded");
    }
    assert_eq!(runs_of(&app, company).await, 16);
    let (_, settings) = boss.get("/settings").await;
    let reserved = settings["pricing"]["budget"]["reserved"].as_f64().unwrap();
    assert!((reserved - 0.96).abs() < 1e-9, "{settings}");
}
