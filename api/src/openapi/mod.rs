//! The OpenAPI 3.1 document, generated from the route annotations. Tags follow spec
//! section 9: a general tag plus one per area.

pub mod conventions;
pub mod enums;
pub mod links;
pub mod operation_ids;
pub mod path_parameters;
pub mod refusals;
pub mod shapes;

use utoipa::openapi::path::Operation;
use utoipa::openapi::security::{ApiKey, ApiKeyValue, HttpAuthScheme, HttpBuilder, SecurityScheme};
use utoipa::{Modify, OpenApi};

/// The document's fixed parts; paths are added by the routers.
#[derive(OpenApi)]
#[openapi(
    info(title = "Sandbox job execution and custom-tables service", version = "5.21.0",
         description = "Environments, tasks, sharing, runs and custom tables. Missing credentials answer 418, not 401."),
    modifiers(&Security),
    security(("bearer" = []), ("api_key" = [])),
    tags(
        (name = "general", description = "Health, metrics and public catalogs"),
        (name = "settings", description = "Company settings"),
        (name = "environments", description = "Environments, context uploads, versions and builds"),
        (name = "tasks", description = "Catalog tasks, versions and shares"),
        (name = "bindings", description = "Room enablement"),
        (name = "secrets", description = "Secret slots and approvals"),
        (name = "runs", description = "Runs, artifacts and public links"),
        (name = "custom_tables", description = "Custom tables: scopes, tables, columns, records, views, migrations"),
        (name = "chatrooms", description = "Room settings the sandbox reads: a room's jobs list and the rooms carrying the sandbox job (the agent tools load only there)"),
        (name = "notifications", description = "The notification center: sandbox_event notifications, unread counts, read marks and a live stream"),
        (name = "review", description = "Review groups, templates and the review processes of held callback writes"),
        (name = "operator", description = "Operator routes below /root, opened by an operator token (sandboxctl token mint --root)"),
    )
)]
pub struct ApiDoc;

struct Security;

impl Modify for Security {
    fn modify(&self, openapi: &mut utoipa::openapi::OpenApi) {
        let components = openapi.components.get_or_insert_with(Default::default);
        components.add_security_scheme(
            "bearer",
            SecurityScheme::Http(
                HttpBuilder::new()
                    .scheme(HttpAuthScheme::Bearer)
                    .bearer_format("JWT")
                    .build(),
            ),
        );
        components.add_security_scheme(
            "api_key",
            SecurityScheme::ApiKey(ApiKey::Header(ApiKeyValue::new("X-Api-Key"))),
        );
    }
}

/// Every operation of the document with its path and method (`get`, `post`, ...),
/// for the passes that complete the document after the routers built it.
pub fn operations_mut(
    document: &mut utoipa::openapi::OpenApi,
) -> Vec<(&str, &'static str, &mut Operation)> {
    let mut found = Vec::new();
    for (path, item) in document.paths.paths.iter_mut() {
        let operations = [
            ("get", &mut item.get),
            ("post", &mut item.post),
            ("put", &mut item.put),
            ("patch", &mut item.patch),
            ("delete", &mut item.delete),
        ];
        for (method, operation) in operations {
            if let Some(operation) = operation {
                found.push((path.as_str(), method, operation));
            }
        }
    }
    found
}
