//! Declarative deployment of a scope's tables ([docs/deployment.md], spec
//! `custom-tables.md` section 2, "REST-only steps around a JSONL deployment"):
//! `GET {scope_mount}/tables/iac/export`, `POST .../iac/plan`, `POST .../iac/apply`
//! and `GET .../iac/state?system=`. The scope's managers only.
//!
//! A document ([`document`]) lists resource rows; plan decides every change on
//! copies of the scope's tables in memory ([`engine`], [`steps`]) and answers them
//! with the data they drop and every error an apply would meet; apply runs the
//! same steps and, only without errors, appends all of their events in one
//! statement with the deployment's record of what the system manages.

mod attached;
mod client_access;
mod columns;
mod commands;
pub mod document;
mod engine;
mod identity;
mod kinds;
mod rows;
mod steps;
mod system_tag;
mod tokens;

use super::gates::Operation;
use super::scope::{Mount, enter_scope};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiQuery;
use crate::middleware::body_limit::{DEFAULT_LIMIT, read_capped};
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::body::Body;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Response};
use document::{Document, PlanError, Row};
use domain::error::Code;
use domain::tables::deployment::{Deployment, deployment_id, is_system_name};
use domain::tables::scope::ScopeRef;
use engine::{Action, Change, Engine};
use identity::Identities;
use projections::read_models::tables::query as tables;
use rows::{Naming, table_reference, table_refs, table_rows};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// The deployment routes of every mount.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(export))
        .routes(routes!(plan))
        .routes(routes!(apply))
        .routes(routes!(state))
}

/// The system a route reads.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct SystemQuery {
    /// The system name (`^[a-z0-9][a-z0-9_-]{0,63}$`); required (checked after
    /// the scope, so a scope the caller cannot see answers 404 first).
    #[param(required = true)]
    pub system: Option<String>,
}

impl SystemQuery {
    /// The system, which must be there.
    fn system(self) -> ApiResult<String> {
        let system = self.system.ok_or_else(|| {
            ApiError::invalid(
                &["query", "system"],
                domain::validation::ViolationKind::Missing,
                None,
            )
        })?;
        check_system(&system)?;
        Ok(system)
    }
}

/// The system a plan or apply deploys.
#[derive(Debug, Deserialize, IntoParams)]
#[into_params(parameter_in = Query)]
pub struct DeployQuery {
    /// The system name; without it, the `system` of the document's rows (a
    /// document with no row then needs it).
    pub system: Option<String>,
}

/// How many changes of each action a plan holds.
#[derive(Debug, Clone, Default, Serialize, ToSchema)]
#[schema(as = DeploymentSummary)]
pub struct Summary {
    /// Resources created.
    pub create: usize,
    /// Resources changed in place.
    pub update: usize,
    /// Resources deleted and created again.
    pub replace: usize,
    /// Resources deleted.
    pub delete: usize,
}

/// What a document would change, and why it could not.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = DeploymentPlan)]
pub struct PlanResponse {
    /// The system.
    pub system: String,
    /// The changes in the order an apply makes them.
    pub changes: Vec<Change>,
    /// Counts per action.
    pub summary: Summary,
    /// Everything that stops an apply (empty: the apply would succeed).
    pub errors: Vec<PlanError>,
}

/// One managed resource.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = DeploymentStateRow)]
pub struct StateRow {
    /// The system.
    pub system: String,
    /// The row kind.
    pub resource_type: String,
    /// The document's ref.
    #[serde(rename = "ref")]
    pub reference: String,
    /// The resource's id (table or view id, column key, trigger or rule id, grant
    /// subject as `<kind>:<id>`).
    pub resource_id: String,
    /// Its table.
    pub table_id: Uuid,
}

/// What a system manages in the scope.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = DeploymentState)]
pub struct StateResponse {
    /// The resources.
    pub rows: Vec<StateRow>,
    /// How many.
    pub total: usize,
}

/// An applied document.
#[derive(Debug, Clone, Serialize, ToSchema)]
#[schema(as = DeploymentApplied)]
pub struct ApplyResponse {
    /// The system.
    pub system: String,
    /// The changes made, in order.
    pub changes: Vec<Change>,
    /// Counts per action.
    pub summary: Summary,
    /// What the system manages now.
    pub state: StateResponse,
}

fn check_system(system: &str) -> ApiResult<()> {
    if is_system_name(system) {
        Ok(())
    } else {
        Err(ApiError::code(
            Code::DeploymentPlanInvalid,
            "system must match ^[a-z0-9][a-z0-9_-]{0,63}$",
        ))
    }
}

/// The scope's tables as a document of `system`, tables in the order of their
/// refs: managed resources under their refs, the others under refs derived from
/// their names; grants and principal cells with identity tokens.
#[utoipa::path(get, path = "/tables/iac/export", tag = "custom_tables", params(SystemQuery),
    responses((status = 200, description = "JSON Lines: one DeploymentRow per line", content_type = "application/x-ndjson", body = Row)))]
async fn export(
    caller: Caller,
    mount: Mount,
    ApiQuery(query): ApiQuery<SystemQuery>,
) -> ApiResult<Response> {
    let (scope, _) = enter_scope(&caller, &mount, Operation::ManageScope).await?;
    let system = query.system()?;
    let state = &caller.state;
    let company = caller.principal.company_id;
    let deployment = load_deployment(&caller, scope, &system).await?;
    let mut loaded = Vec::new();
    for row in tables::scope_tables(&state.pool, company, scope, false, 0, i64::MAX).await? {
        loaded.push(
            state
                .bus
                .load::<domain::tables::table::CustomTable>(&row.id.to_string())
                .await?,
        );
    }
    let tag_row = match system_tag::load(&caller, scope, &system).await? {
        Some(tag) => {
            let id = tag.id().to_string();
            let reference = deployment
                .reference_of("system_tag", Uuid::nil(), &id)
                .unwrap_or("system-tag")
                .to_string();
            system_tag::row(tag.state(), reference)
        }
        None => None,
    };
    let table_ids: Vec<Uuid> = loaded.iter().filter_map(|t| t.table_id).collect();
    let commands =
        projections::read_models::table_commands::query::table_commands(&state.pool, &table_ids)
            .await?;
    let tokens =
        projections::read_models::public_tokens::query::of_tables(&state.pool, &table_ids).await?;
    let refs = table_refs(&loaded, &deployment);
    let ids = Identities::load(&state.pool, company).await?;
    let table = |id: Uuid| table_reference(&refs, id);
    let cell = |c: &str| ids.cell_token(c);
    let subject = |s| ids.subject_token(s);
    let reference = |kind: &str, table: Uuid, id: &str, derived: String| {
        deployment
            .reference_of(kind, table, id)
            .map_or(derived, str::to_string)
    };
    let naming = Naming {
        system: &system,
        table: &table,
        cell: &cell,
        subject: &subject,
        reference: &reference,
        filter: &|f, columns| ids.filter_tokens(f, columns),
    };
    let mut ordered: Vec<(&String, &domain::tables::table::CustomTable)> = loaded
        .iter()
        .filter_map(|t| t.table_id.and_then(|id| refs.get(&id)).map(|r| (r, t)))
        .collect();
    ordered.sort_by_key(|(r, _)| *r);
    let mut out: Vec<Row> = tag_row.into_iter().collect();
    for (r, t) in ordered {
        out.extend(table_rows(t, &commands, &tokens, r, &naming));
    }
    let mut response = Document::write(&out).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/x-ndjson"),
    );
    Ok(response)
}

async fn load_deployment(caller: &Caller, scope: ScopeRef, system: &str) -> ApiResult<Deployment> {
    Ok(caller
        .state
        .bus
        .load::<Deployment>(&deployment_id(scope, system))
        .await?)
}

/// Decides a document's changes on copies of the scope's tables.
async fn prepare<'a>(
    caller: &'a Caller,
    mount: &Mount,
    system: Option<String>,
    headers: &HeaderMap,
    body: Body,
) -> ApiResult<Engine<'a>> {
    let (scope, facts) = enter_scope(caller, mount, Operation::ManageScope).await?;
    let bytes = read_capped(headers, body, DEFAULT_LIMIT).await?;
    let text = std::str::from_utf8(&bytes)
        .map_err(|_| ApiError::code(Code::InvalidBody, "the document is not UTF-8 text"))?;
    let system = match system.or_else(|| first_system(text)) {
        Some(system) => system,
        None => {
            return Err(ApiError::code(
                Code::DeploymentPlanInvalid,
                "name the system: ?system= or the rows' system",
            ));
        }
    };
    check_system(&system)?;
    let (document, errors) = Document::parse(text, &system);
    let tag = system_tag::load(caller, scope, &system).await?;
    let mut engine = Engine::load(
        caller,
        scope,
        facts.room_department,
        &system,
        document,
        errors,
        tag,
    )
    .await?;
    steps::decide(&mut engine).await?;
    Ok(engine)
}

/// The `system` of a document's first row.
fn first_system(text: &str) -> Option<String> {
    let line = text.lines().find(|l| !l.trim().is_empty())?;
    let value: serde_json::Value = serde_json::from_str(line).ok()?;
    value.get("system")?.as_str().map(str::to_string)
}

fn summary(changes: &[Change]) -> Summary {
    let mut s = Summary::default();
    for c in changes {
        match c.action {
            Action::Create => s.create += 1,
            Action::Update => s.update += 1,
            Action::Replace => s.replace += 1,
            Action::Delete => s.delete += 1,
        }
    }
    s
}

/// Compares a document (JSON Lines) with the scope: the ordered changes, the data
/// each drops, and every error an apply would meet. Writes nothing.
#[utoipa::path(post, path = "/tables/iac/plan", tag = "custom_tables", params(DeployQuery),
    request_body(content = Row, content_type = "application/x-ndjson", description = "The document: JSON Lines, one DeploymentRow per line"),
    responses((status = 200, body = PlanResponse)))]
async fn plan(
    caller: Caller,
    mount: Mount,
    ApiQuery(query): ApiQuery<DeployQuery>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Json<PlanResponse>> {
    let engine = prepare(&caller, &mount, query.system, &headers, body).await?;
    Ok(Json(PlanResponse {
        system: engine.system.clone(),
        summary: summary(&engine.changes),
        changes: engine.changes,
        errors: engine.errors,
    }))
}

/// Applies a document: when its plan has no error, every change as events in one
/// all-or-nothing step (422 `deployment_plan_invalid` with the plan otherwise;
/// nothing is written). Applying the same document again changes nothing.
#[utoipa::path(post, path = "/tables/iac/apply", tag = "custom_tables", params(DeployQuery),
    request_body(content = Row, content_type = "application/x-ndjson", description = "The document: JSON Lines, one DeploymentRow per line"),
    responses((status = 200, body = ApplyResponse)))]
async fn apply(
    caller: Caller,
    mount: Mount,
    ApiQuery(query): ApiQuery<DeployQuery>,
    headers: HeaderMap,
    body: Body,
) -> ApiResult<Json<ApplyResponse>> {
    let engine = prepare(&caller, &mount, query.system, &headers, body).await?;
    if !engine.errors.is_empty() {
        let errors = serde_json::to_value(&engine.errors).unwrap_or_default();
        let changes = serde_json::to_value(&engine.changes).unwrap_or_default();
        return Err(ApiError::code(
            Code::DeploymentPlanInvalid,
            format!(
                "the plan has {} error(s); nothing was applied",
                engine.errors.len()
            ),
        )
        .with("errors", errors)
        .with("changes", changes));
    }
    let system = engine.system.clone();
    let scope = engine.scope;
    let changes = engine.changes.clone();
    engine.commit().await?;
    Ok(Json(ApplyResponse {
        system: system.clone(),
        summary: summary(&changes),
        changes,
        state: state_of(&caller, scope, &system).await?,
    }))
}

async fn state_of(caller: &Caller, scope: ScopeRef, system: &str) -> ApiResult<StateResponse> {
    let deployment = load_deployment(caller, scope, system).await?;
    let rows: Vec<StateRow> = deployment
        .resources
        .into_iter()
        .map(|r| StateRow {
            system: system.to_string(),
            resource_type: r.resource_type,
            reference: r.reference,
            resource_id: r.resource_id,
            table_id: r.table_id,
        })
        .collect();
    Ok(StateResponse {
        total: rows.len(),
        rows,
    })
}

/// What a system manages in the scope: `{rows[], total}`, each row with system,
/// resource_type, ref, resource_id and table_id (the ids a document cannot hold,
/// such as a cross-table trigger action's `table_id`).
#[utoipa::path(get, path = "/tables/iac/state", tag = "custom_tables", params(SystemQuery),
    responses((status = 200, body = StateResponse)))]
async fn state(
    caller: Caller,
    mount: Mount,
    ApiQuery(query): ApiQuery<SystemQuery>,
) -> ApiResult<Json<StateResponse>> {
    let (scope, _) = enter_scope(&caller, &mount, Operation::ManageScope).await?;
    let system = query.system()?;
    Ok(Json(state_of(&caller, scope, &system).await?))
}
