//! The custom-tables API under `/private/module/custom_tables` (spec
//! `custom-tables.md`), mounted once per scope: `/chatroom/{chatroom_id}`,
//! `/department/{department_id}` and `/company`. Every table route resolves the
//! table through its owning scope's mount and gates it (see [`gates`], [`scope`]);
//! the scope-id-free routes (migration status, attachment files) resolve the scope
//! from the migration or the table.

pub mod access;
pub mod blobs;
pub mod callback;
mod callback_tokens;
pub mod cells;
pub mod client_access;
mod column_schema;
mod column_sources;
mod columns;
pub mod commands;
mod export;
pub mod gates;
mod grant_body;
pub mod iac;
mod import;
pub mod migrations;
mod permissions;
pub mod public_read;
pub mod public_tokens;
pub mod records;
mod rules;
pub mod scope;
pub mod search;
mod selection;
mod sharing;
mod table;
mod tags;
pub mod triggers;
mod views;

pub use scope::PREFIX;

use crate::auth::restricted::FORBIDDEN_PATH;
use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::Request;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::principal::Principal;
use utoipa_axum::router::OpenApiRouter;

/// The routes every mount serves.
fn mount_routes() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .merge(table::router())
        .merge(columns::router())
        .merge(records::router())
        .merge(search::router())
        .merge(export::router())
        .merge(views::router())
        .merge(permissions::router())
        .merge(client_access::router())
        .merge(callback_tokens::router())
        .merge(triggers::router())
        .merge(rules::router())
        .merge(commands::router())
        .merge(iac::router())
        .merge(tags::router())
}

/// Every custom-table route (relative to [`PREFIX`]).
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .nest(
            "/chatroom",
            migrations::router()
                .merge(public_tokens::router())
                .merge(blobs::router()),
        )
        .nest(
            "/department",
            migrations::router()
                .merge(public_tokens::router())
                .merge(blobs::router()),
        )
        .nest(
            "/chatroom/{chatroom_id}",
            mount_routes().merge(sharing::chatroom_router()),
        )
        .nest(
            "/department/{department_id}",
            mount_routes()
                .merge(sharing::department_router())
                .merge(import::router()),
        )
        .nest(
            "/company",
            mount_routes()
                .merge(columns::company_router())
                .merge(migrations::router())
                .merge(public_tokens::router())
                .merge(blobs::router()),
        )
}

/// Middleware: a sandbox-scoped (restricted) API key may use no custom-table route.
pub async fn refuse_restricted(request: Request, next: Next) -> Response {
    let restricted = request
        .extensions()
        .get::<Principal>()
        .is_some_and(Principal::is_restricted);
    if restricted {
        return ApiError::Forbidden(FORBIDDEN_PATH).into_response();
    }
    next.run(request).await
}
