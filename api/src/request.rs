//! Per-request facts handlers pass to commands (the request id and the time), and
//! the [`Caller`] extractor that bundles them with the state and the principal.

use crate::auth::Auth;
use crate::error::{ApiError, ApiResult};
use crate::state::AppState;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use chrono::{DateTime, Utc};
use domain::principal::{Actor, EventMetadata, Principal};
use domain::{AggregateExt, SpecError};
use projections::Committed;
use sqlx::PgPool;
use std::convert::Infallible;

/// The request id (from `x-request-id`, set by the request-id layer) and the time
/// the request arrived.
#[derive(Debug, Clone)]
pub struct Context {
    /// Request id.
    pub request_id: String,
    /// Arrival time.
    pub time: DateTime<Utc>,
}

impl Context {
    /// The facts of a request arriving now with these headers.
    pub fn of(headers: &axum::http::HeaderMap) -> Self {
        let request_id = headers
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_string();
        Self {
            request_id,
            time: Utc::now(),
        }
    }

    /// Event metadata for a command this principal causes.
    pub fn metadata(&self, principal: &Principal) -> EventMetadata {
        EventMetadata {
            actor: Actor::Principal(principal.clone()),
            company_id: Some(principal.company_id),
            request_id: self.request_id.clone(),
            time: self.time,
        }
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Context {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Self::of(&parts.headers))
    }
}

/// What every authenticated route works with: the shared state, the request's facts
/// and the caller. One extractor, so a handler's signature names only what is its
/// own (path, query, body).
#[derive(Clone)]
pub struct Caller {
    /// The shared state.
    pub state: AppState,
    /// The request id and arrival time.
    pub ctx: Context,
    /// The authenticated principal.
    pub principal: Principal,
}

impl FromRequestParts<AppState> for Caller {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> Result<Self, ApiError> {
        let Ok(ctx) = Context::from_request_parts(parts, state).await;
        let Auth(principal) = Auth::from_request_parts(parts, state).await?;
        Ok(Self {
            state: state.clone(),
            ctx,
            principal,
        })
    }
}

impl Caller {
    /// The database the read models live in.
    pub fn pool(&self) -> &PgPool {
        &self.state.pool
    }

    /// Event metadata for a command this caller causes.
    pub fn metadata(&self) -> EventMetadata {
        self.ctx.metadata(&self.principal)
    }

    /// Executes a command as this caller and waits for the read models (see
    /// [`AppState::command`]).
    pub async fn command<A>(
        &self,
        id: impl ToString,
        command: A::Command,
    ) -> ApiResult<Committed<A>>
    where
        A: AggregateExt<Services = ()>,
        A::Command: Clone,
        A::Error: SpecError,
    {
        self.state.command::<A>(id, command, &self.metadata()).await
    }

    /// Executes a command as this caller without waiting for the read models; wait
    /// with [`Self::wait`] (after releasing whatever the append was made under).
    pub async fn append<A>(&self, id: impl ToString, command: A::Command) -> ApiResult<Committed<A>>
    where
        A: AggregateExt<Services = ()>,
        A::Command: Clone,
        A::Error: SpecError,
    {
        Ok(self
            .state
            .bus
            .append::<A>(&id.to_string(), command, &self.metadata())
            .await?)
    }

    /// Waits until the read models reflect an appended command: 503
    /// `committed_not_yet_visible` when they do not in time.
    pub async fn wait<A: AggregateExt>(&self, committed: &Committed<A>) -> ApiResult<()> {
        self.state
            .bus
            .wait(committed)
            .await
            .map_err(ApiError::NotYetVisible)
    }
}
