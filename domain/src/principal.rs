//! Who is acting: the resolved principal of a tenant request, or an operator.

use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use uuid::Uuid;

/// Role threshold at or above which a user is a company manager.
pub const COMPANY_MANAGER_ROLE: i32 = 3;

/// How the caller authenticated (spec `SandboxAuthMethod`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AuthMethod {
    /// `Authorization: Bearer <JWT>`.
    Jwt,
    /// `X-Api-Key`.
    ApiKey,
    /// A custom-table callback token's write, acting as the moderator who minted it
    /// (never the principal of a sandbox run).
    CallbackToken,
    /// A table trigger's action, acting as the user who saved the trigger set.
    /// Writes made this way fire no triggers.
    Trigger,
    /// A restricted definition-authority Command's write, acting as the Command's
    /// author and limited to its declared effect; the Command is the write's
    /// effect identity (the event metadata's `request_id` names it).
    Command,
}

impl AuthMethod {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Jwt => "jwt",
            Self::ApiKey => "api_key",
            Self::CallbackToken => "callback_token",
            Self::Trigger => "trigger",
            Self::Command => "command",
        }
    }
}

/// The kind of principal (spec `SandboxPrincipalType`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PrincipalType {
    /// A person with a login.
    User,
    /// An external messaging channel's client.
    SocialMediaClient,
}

impl PrincipalType {
    /// The wire name.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::User => "user",
            Self::SocialMediaClient => "social_media_client",
        }
    }
}

/// The scope of an API key: `full` acts like its owner, `sandbox` is restricted to the
/// chatroom paths of spec section 5.4.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ApiKeyScope {
    /// Everything the owner may do.
    Full,
    /// The restricted sandbox scope.
    Sandbox,
}

/// The resolved caller of a tenant request (spec section 5.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Principal {
    /// The tenant.
    pub company_id: Uuid,
    /// User or social media client.
    pub principal_type: PrincipalType,
    /// Id of the user or social media client.
    pub principal_id: Uuid,
    /// How the request authenticated.
    pub auth_method: AuthMethod,
    /// The user's integer role (0 for social media clients).
    pub role: i32,
    /// Scope of the API key, when one was used.
    pub api_key_scope: Option<ApiKeyScope>,
    /// The API key that authenticated the request, when one was used.
    pub api_key_id: Option<Uuid>,
    /// Chatrooms a restricted key may reach; `None` when not restricted.
    pub allowed_chatroom_ids: Option<Vec<Uuid>>,
}

impl Principal {
    /// True for a user whose role makes them a company manager.
    pub fn is_company_manager(&self) -> bool {
        self.principal_type == PrincipalType::User && self.role >= COMPANY_MANAGER_ROLE
    }

    /// True for a sandbox-scoped (restricted) API key.
    pub fn is_restricted(&self) -> bool {
        self.api_key_scope == Some(ApiKeyScope::Sandbox)
    }

    /// A stable string naming the principal, e.g. `user:<uuid>`.
    pub fn reference(&self) -> String {
        format!("{}:{}", self.principal_type.as_str(), self.principal_id)
    }
}

/// Whoever caused an event: a tenant principal or an operator using `sandboxctl`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Actor {
    /// A tenant request.
    Principal(Principal),
    /// An operator command; the name is the operator's login as the CLI saw it.
    Operator(String),
    /// The service itself (workers, schedulers).
    System(&'static str),
}

/// What every stored event records about its cause (spec: principal type, id and auth
/// method, company, request id and time).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventMetadata {
    /// Who acted.
    pub actor: Actor,
    /// Tenant the change belongs to, when it belongs to one.
    pub company_id: Option<Uuid>,
    /// Request id of the HTTP request or CLI invocation.
    pub request_id: String,
    /// When the command was decided.
    pub time: chrono::DateTime<chrono::Utc>,
}

impl EventMetadata {
    /// The flat string map cqrs-es stores beside each event.
    pub fn to_map(&self) -> HashMap<String, String> {
        let mut map = HashMap::new();
        match &self.actor {
            Actor::Principal(p) => {
                map.insert("principal_type".into(), p.principal_type.as_str().into());
                map.insert("principal_id".into(), p.principal_id.to_string());
                map.insert("auth_method".into(), p.auth_method.as_str().into());
                if let Some(key) = p.api_key_id {
                    map.insert("api_key_id".into(), key.to_string());
                }
            }
            Actor::Operator(name) => {
                map.insert("principal_type".into(), "operator".into());
                map.insert("principal_id".into(), name.clone());
                map.insert("auth_method".into(), "cli".into());
            }
            Actor::System(component) => {
                map.insert("principal_type".into(), "system".into());
                map.insert("principal_id".into(), (*component).into());
                map.insert("auth_method".into(), "internal".into());
            }
        }
        if let Some(company) = self.company_id {
            map.insert("company_id".into(), company.to_string());
        }
        map.insert("request_id".into(), self.request_id.clone());
        map.insert(
            "time".into(),
            self.time
                .to_rfc3339_opts(chrono::SecondsFormat::Micros, true),
        );
        map
    }
}
