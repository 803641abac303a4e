//! `PUT` and `GET {scope_mount}/tables/{table_id}/rules` (table moderators): the
//! table's approval rules, replaced whole ([docs/approvals.md]). A rule names a
//! review template of the company; a callback write of an event a rule lists is
//! held for approval (`callback/hold.rs`).

use super::gates::Operation;
use super::scope::{Mount, open_table};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use domain::error::Code;
use domain::tables::rule::ApprovalRule;
use domain::tables::table::TableCommand;
use projections::read_models::review::query as review;
use projections::read_models::tables::query as tables;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;

/// The rule routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new().routes(routes!(get_rules, put_rules))
}

/// A table's whole rule set.
#[derive(Debug, Deserialize, Serialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RuleSet {
    /// `[{id, label, type: require_approval, events: [created|updated], template_id}]`;
    /// a rule missing here is deleted.
    #[schema(schema_with = crate::openapi::shapes::approval_rules)]
    pub rules: Vec<ApprovalRule>,
}

async fn saved(caller: &Caller, table_id: uuid::Uuid) -> ApiResult<Json<RuleSet>> {
    Ok(Json(RuleSet {
        rules: tables::rules(caller.pool(), table_id).await?,
    }))
}

/// The table's approval rules.
#[utoipa::path(get, path = "/tables/{table_id}/rules", tag = "custom_tables",
    params(("table_id" = uuid::Uuid, Path, description = "The table")),
    responses((status = 200, body = RuleSet)))]
async fn get_rules(caller: Caller, mount: Mount) -> ApiResult<Json<RuleSet>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    saved(&caller, table.row.id).await
}

/// Replaces the table's approval rules; each names a review template of the
/// company (400 `rule_config_invalid` otherwise).
#[utoipa::path(put, path = "/tables/{table_id}/rules", tag = "custom_tables", request_body = RuleSet,
    params(("table_id" = uuid::Uuid, Path, description = "The table")),
    responses((status = 200, body = RuleSet)))]
async fn put_rules(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<RuleSet>,
) -> ApiResult<Json<RuleSet>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let company = caller.principal.company_id;
    for rule in &body.rules {
        if review::template(caller.pool(), company, rule.template_id)
            .await?
            .is_none()
        {
            return Err(ApiError::code(
                Code::RuleConfigInvalid,
                format!(
                    "rule '{}': review template {} does not exist",
                    rule.id, rule.template_id
                ),
            ));
        }
    }
    table
        .execute(TableCommand::SetRules { rules: body.rules })
        .await?;
    saved(&caller, table.row.id).await
}
