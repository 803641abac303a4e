//! Client access of a table (spec `custom-tables.md` section 2, "ending client
//! access"; section 8, the passphrase throttle): `PATCH .../tables/{table_id}/client-access`
//! lets social media clients reach the table through their grants (or refuses them
//! all) and can ask them for a passphrase first; `POST .../client-access/unlock` is
//! where a client gives it, at most 5 attempts per 300 seconds per table and
//! client. The passphrase is kept as an Argon2id hash; a new one locks every
//! client out again.

use super::gates::{self, Operation};
use super::scope::{Mount, TABLE_NOT_FOUND, open_table, scope_facts};
use crate::error::{ApiError, ApiResult};
use crate::extract::ApiJson;
use crate::request::Caller;
use crate::state::AppState;
use crate::throttle::Admission;
use argon2::Argon2;
use argon2::password_hash::{PasswordHash, PasswordHasher, PasswordVerifier, SaltString};
use axum::Json;
use axum::http::{HeaderValue, header};
use domain::error::Code;
use domain::principal::PrincipalType;
use domain::tables::table::{CustomTable, TableCommand};
use projections::read_models::tables::query as tables;
use serde::{Deserialize, Serialize};
use std::time::Instant;
use utoipa::ToSchema;
use utoipa_axum::router::OpenApiRouter;
use utoipa_axum::routes;
use uuid::Uuid;

/// Passphrase attempts per table and client in one window.
pub const ATTEMPTS: i64 = 5;

/// Characters a passphrase holds.
const LENGTH: std::ops::RangeInclusive<usize> = 8..=200;

/// The client-access routes.
pub fn router() -> OpenApiRouter<AppState> {
    OpenApiRouter::new()
        .routes(routes!(patch_client_access))
        .routes(routes!(unlock))
}

/// A change of client access.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ClientAccess {
    /// Whether social media clients may reach the table through their grants
    /// (default true).
    pub enabled: bool,
    /// Whether they give a passphrase first (absent: unchanged).
    pub passphrase_enabled: Option<bool>,
    /// The passphrase (8..200 characters): needed to turn it on unless one is
    /// stored; a new one locks every client out again. Never answered.
    pub passphrase: Option<String>,
}

/// Client access as it stands.
#[derive(Debug, Serialize, ToSchema)]
pub struct ClientAccessResponse {
    /// Whether social media clients may reach the table through their grants.
    pub enabled: bool,
    /// Whether they give a passphrase first.
    pub passphrase_enabled: bool,
}

/// A client's passphrase.
#[derive(Debug, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Unlock {
    /// The table's passphrase.
    pub passphrase: String,
}

/// A client that gave the passphrase.
#[derive(Debug, Serialize, ToSchema)]
pub struct Unlocked {
    /// Always true: the client reaches the table through its grants now.
    pub unlocked: bool,
}

fn invalid(message: &str) -> ApiError {
    ApiError::code(Code::TableConfigInvalid, message)
}

/// The Argon2id hash (PHC string) of a passphrase of 8..200 characters.
pub async fn hash(passphrase: String) -> ApiResult<String> {
    if !LENGTH.contains(&passphrase.chars().count()) {
        return Err(invalid("passphrase must be 8..200 characters"));
    }
    tokio::task::spawn_blocking(move || {
        let salt = SaltString::generate(&mut argon2::password_hash::rand_core::OsRng);
        Argon2::default()
            .hash_password(passphrase.as_bytes(), &salt)
            .map(|h| h.to_string())
    })
    .await
    .map_err(ApiError::internal)?
    .map_err(|e| ApiError::internal(anyhow::anyhow!(e.to_string())))
}

/// Whether a passphrase matches a stored hash.
pub async fn matches(passphrase: String, stored: String) -> ApiResult<bool> {
    tokio::task::spawn_blocking(move || {
        PasswordHash::new(&stored)
            .map(|parsed| {
                Argon2::default()
                    .verify_password(passphrase.as_bytes(), &parsed)
                    .is_ok()
            })
            .unwrap_or(false)
    })
    .await
    .map_err(ApiError::internal)
}

/// Lets social media clients reach the table, or refuses them all; asks them for a
/// passphrase first, or stops asking (table managers).
#[utoipa::path(patch, path = "/tables/{table_id}/client-access", tag = "custom_tables", request_body = ClientAccess,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = ClientAccessResponse)))]
async fn patch_client_access(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<ClientAccess>,
) -> ApiResult<Json<ClientAccessResponse>> {
    let table = open_table(&caller, &mount, Operation::ManageTable).await?;
    let stored = caller
        .state
        .bus
        .load::<CustomTable>(&table.row.id.to_string())
        .await?
        .client_passphrase;
    let passphrase_hash = match (body.passphrase_enabled, body.passphrase) {
        (Some(false), Some(_)) => {
            return Err(invalid("a passphrase is given only to turn it on"));
        }
        (Some(false), None) => None,
        (_, Some(passphrase)) => match &stored {
            Some(current) if matches(passphrase.clone(), current.clone()).await? => stored.clone(),
            _ => Some(hash(passphrase).await?),
        },
        (Some(true), None) => {
            if stored.is_none() {
                return Err(invalid("turning the passphrase on needs a passphrase"));
            }
            stored.clone()
        }
        (None, None) => stored.clone(),
    };
    table
        .execute(TableCommand::SetClientAccess {
            enabled: body.enabled,
        })
        .await?;
    table
        .execute(TableCommand::SetClientPassphrase {
            passphrase_hash: passphrase_hash.clone(),
        })
        .await?;
    Ok(Json(ClientAccessResponse {
        enabled: body.enabled,
        passphrase_enabled: passphrase_hash.is_some(),
    }))
}

/// A social media client gives the table's passphrase and reaches the table
/// through its grants from then on (until the passphrase changes). 5 attempts per
/// 300 seconds per table and client (429 `passphrase_rate_limited` with
/// `Retry-After`); a wrong passphrase answers 403 `passphrase_invalid`; a table
/// without a passphrase or one clients may not reach, 404; a user gets 403 (404
/// outside the table's scope).
#[utoipa::path(post, path = "/tables/{table_id}/client-access/unlock", tag = "custom_tables", request_body = Unlock,
    params(("table_id" = Uuid, Path, description = "The table")),
    responses((status = 200, body = Unlocked)))]
async fn unlock(
    caller: Caller,
    mount: Mount,
    ApiJson(body): ApiJson<Unlock>,
) -> ApiResult<Json<Unlocked>> {
    let company = caller.principal.company_id;
    let table_id = mount
        .uuid("table_id")
        .map_err(|_| ApiError::Missing(TABLE_NOT_FOUND))?;
    let row = tables::table(caller.pool(), company, table_id)
        .await?
        .filter(|row| mount.scope(company) == Some(row.scope()))
        .filter(|row| row.client_access && row.client_passphrase)
        .ok_or(ApiError::Missing(TABLE_NOT_FOUND))?;
    if caller.principal.principal_type != PrincipalType::SocialMediaClient {
        // A user outside the table's scope does not learn that it exists.
        let enters = scope_facts(&caller, row.scope())
            .await?
            .is_some_and(|facts| gates::entry(row.scope_kind, &facts.standing));
        if !enters {
            return Err(ApiError::Missing(TABLE_NOT_FOUND));
        }
        return Err(ApiError::Forbidden(
            "Insufficient permissions. (only social media clients give a passphrase)",
        ));
    }
    let key = Uuid::new_v5(&row.id, caller.principal.principal_id.as_bytes());
    if let Admission::Limited { retry_after } =
        caller
            .state
            .passphrase_throttle
            .admit(key, ATTEMPTS, Instant::now())
    {
        return Err(ApiError::code(
            Code::PassphraseRateLimited,
            format!(
                "at most {ATTEMPTS} passphrase attempts per 300 seconds; retry in {retry_after} s"
            ),
        )
        .with_header(header::RETRY_AFTER, HeaderValue::from(retry_after)));
    }
    let table = caller
        .state
        .bus
        .load::<CustomTable>(&row.id.to_string())
        .await?;
    let Some(stored) = table.client_passphrase else {
        return Err(ApiError::Missing(TABLE_NOT_FOUND));
    };
    if !matches(body.passphrase, stored).await? {
        return Err(ApiError::code(
            Code::PassphraseInvalid,
            "the passphrase does not match",
        ));
    }
    caller
        .command::<CustomTable>(
            row.id,
            TableCommand::UnlockClient {
                client_id: caller.principal.principal_id,
            },
        )
        .await?;
    Ok(Json(Unlocked { unlocked: true }))
}
