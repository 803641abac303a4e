//! Authentication (spec section 5): `Authorization: Bearer <JWT>` or `X-Api-Key`,
//! resolved to a [`Principal`] stored in the request's extensions.

pub mod api_key;
pub mod jwt;
pub mod operator;
pub mod restricted;

use crate::error::ApiError;
use crate::state::AppState;
use axum::extract::{FromRequestParts, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderMap, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use domain::principal::{ApiKeyScope, AuthMethod, Principal, PrincipalType};
use uuid::Uuid;

/// The authenticated caller of a handler.
#[derive(Debug, Clone)]
pub struct Auth(pub Principal);

impl<S: Send + Sync> FromRequestParts<S> for Auth {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        parts
            .extensions
            .get::<Principal>()
            .cloned()
            .map(Auth)
            .ok_or_else(|| {
                ApiError::internal(anyhow::anyhow!(
                    "route is not behind the authentication layer"
                ))
            })
    }
}

/// Middleware: resolves the principal or answers 418.
pub async fn authenticate(
    State(state): State<AppState>,
    mut request: Request,
    next: Next,
) -> Response {
    match resolve(&state, request.headers()).await {
        Ok(principal) => {
            tracing::Span::current().record("principal", principal.reference());
            request.extensions_mut().insert(principal);
            next.run(request).await
        }
        Err(error) => error.into_response(),
    }
}

/// Resolves the credentials of a request.
pub async fn resolve(state: &AppState, headers: &HeaderMap) -> Result<Principal, ApiError> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        let token = value
            .to_str()
            .ok()
            .and_then(|v| {
                v.strip_prefix("Bearer ")
                    .or_else(|| v.strip_prefix("bearer "))
            })
            .ok_or(ApiError::Unauthenticated)?;
        return from_jwt(state, token.trim()).await;
    }
    if let Some(value) = headers.get("x-api-key") {
        let secret = value.to_str().map_err(|_| ApiError::Unauthenticated)?;
        let origin = headers.get(header::ORIGIN).and_then(|v| v.to_str().ok());
        return from_api_key(state, secret.trim(), origin).await;
    }
    Err(ApiError::Unauthenticated)
}

async fn from_jwt(state: &AppState, token: &str) -> Result<Principal, ApiError> {
    let claims = state.jwt.verify(token).ok_or(ApiError::Unauthenticated)?;
    user_principal(state, claims.company_id, claims.sub, AuthMethod::Jwt)
        .await?
        .ok_or(ApiError::Unauthenticated)
}

/// The principal of a user of the company with its current role, acting through
/// `method` (a login, or a callback token acting as its minting moderator); `None`
/// when the user is not in the company.
pub async fn user_principal(
    state: &AppState,
    company: Uuid,
    user: Uuid,
    method: AuthMethod,
) -> Result<Option<Principal>, ApiError> {
    let role: Option<i32> =
        sqlx::query_scalar("SELECT role FROM users WHERE id = $1 AND company_id = $2")
            .bind(user)
            .bind(company)
            .fetch_optional(&state.pool)
            .await?;
    Ok(role.map(|role| Principal {
        company_id: company,
        principal_type: PrincipalType::User,
        principal_id: user,
        auth_method: method,
        role,
        api_key_scope: None,
        api_key_id: None,
        allowed_chatroom_ids: None,
    }))
}

#[derive(sqlx::FromRow)]
struct KeyRow {
    id: Uuid,
    company_id: Uuid,
    owner_kind: String,
    owner_id: Uuid,
    scope: String,
    chatroom_ids: Vec<Uuid>,
    domains: Vec<String>,
    role: Option<i32>,
    owner_exists: bool,
}

async fn from_api_key(
    state: &AppState,
    secret: &str,
    origin: Option<&str>,
) -> Result<Principal, ApiError> {
    let row: Option<KeyRow> = sqlx::query_as(
        "SELECT k.id, k.company_id, k.owner_kind, k.owner_id, k.scope, k.chatroom_ids, k.domains, u.role,
                (u.id IS NOT NULL OR s.id IS NOT NULL) AS owner_exists
           FROM api_keys k
           LEFT JOIN users u ON k.owner_kind = 'user' AND u.id = k.owner_id AND u.company_id = k.company_id
           LEFT JOIN social_clients s
                  ON k.owner_kind = 'social_media_client' AND s.id = k.owner_id AND s.company_id = k.company_id
          WHERE k.secret_sha256 = $1 AND NOT k.revoked",
    )
    .bind(api_key::hash_secret(secret))
    .fetch_optional(&state.pool)
    .await?;
    let row = row
        .filter(|r| r.owner_exists)
        .ok_or(ApiError::Unauthenticated)?;
    if !api_key::origin_allowed(&row.domains, origin) {
        return Err(ApiError::Forbidden(
            "The API key may not be used from this origin.",
        ));
    }
    let (principal_type, role) = match row.owner_kind.as_str() {
        "user" => (PrincipalType::User, row.role.unwrap_or(0)),
        _ => (PrincipalType::SocialMediaClient, 0),
    };
    let scope = if row.scope == "sandbox" {
        ApiKeyScope::Sandbox
    } else {
        ApiKeyScope::Full
    };
    Ok(Principal {
        company_id: row.company_id,
        principal_type,
        principal_id: row.owner_id,
        auth_method: AuthMethod::ApiKey,
        role,
        api_key_scope: Some(scope),
        api_key_id: Some(row.id),
        allowed_chatroom_ids: (scope == ApiKeyScope::Sandbox).then_some(row.chatroom_ids),
    })
}
