//! Who calls in the matrix: a directory with one principal of every standing the
//! sandbox distinguishes, and the credentials each matrix column sends.
//!
//! The standard directory (`support::standard_directory`) has no manager of another
//! department and no room manager who is not also a department manager, and its
//! department manager sits in the room; here every standing is held by exactly one
//! principal, so a cell says which rule let it in or kept it out.

use crate::support::{As, Seed};
use reqwest::RequestBuilder;
use serde_json::{Value, json};

/// The matrix columns, in the order the golden file lists them.
pub const CALLERS: [&str; 13] = [
    "company_manager",
    "department_manager",
    "other_department_manager",
    "room_manager",
    "room_member",
    "outsider",
    "full_key",
    "sandbox_key",
    "origin_key_no_origin",
    "origin_key_foreign_origin",
    "social_client",
    "other_company",
    "anonymous",
];

/// The matrix world's directory.
///
/// Company `acme`: department `rnd` owns the resources and room `lab`; `ops` is
/// another department with room `ops-room`.
/// - `boss`: company manager (role 3), in no department or room.
/// - `dm`: manages `rnd`; not in `lab` (its standing there is the department ladder).
/// - `dmo`: manages `ops` only.
/// - `rm`: manages room `lab`; a plain member of `rnd`.
/// - `member`: a member of `lab` and `rnd`.
/// - `outsider`: in `ops` and `ops-room`; no standing in `rnd` or `lab`.
/// - keys: `full` (boss, full scope), `bot` (member, sandbox scope, `lab` allowed),
///   `web` (boss, full scope, origin `app.acme.test` only), `line` (social client
///   `line1`, a member of `lab`).
///
/// Company `globex`: `ceo` (role 5) manages room `hq`.
pub fn matrix_directory() -> Value {
    json!({"companies": [
        {"ref": "acme", "name": "Acme",
         "departments": [{"ref": "rnd", "name": "R&D"}, {"ref": "ops", "name": "Ops"}],
         "chatrooms": [{"ref": "lab", "name": "lab", "department": "rnd"},
                       {"ref": "ops-room", "name": "ops room", "department": "ops"}],
         "users": [
            {"ref": "boss", "username": "boss", "role": 3},
            {"ref": "dm", "username": "dm", "role": 1, "departments": ["rnd"], "manages_departments": ["rnd"]},
            {"ref": "dmo", "username": "dmo", "role": 1, "departments": ["ops"], "manages_departments": ["ops"]},
            {"ref": "rm", "username": "rm", "role": 1, "departments": ["rnd"],
             "chatrooms": ["lab"], "manages_chatrooms": ["lab"]},
            {"ref": "member", "username": "member", "role": 1, "departments": ["rnd"], "chatrooms": ["lab"]},
            {"ref": "outsider", "username": "outsider", "role": 1, "departments": ["ops"], "chatrooms": ["ops-room"]}],
         "api_keys": [
            {"ref": "bot", "user": "member", "scope": "sandbox", "chatrooms": ["lab"], "domains": ["*"]},
            {"ref": "full", "user": "boss", "scope": "full", "domains": ["*"]},
            {"ref": "web", "user": "boss", "scope": "full", "domains": ["app.acme.test"]},
            {"ref": "line", "social_client": "line1", "scope": "full", "domains": ["*"]}],
         "social_clients": [{"ref": "line1", "platform": "line", "platform_user_id": "U1", "chatrooms": ["lab"]}]},
        {"ref": "globex", "name": "Globex",
         "chatrooms": [{"ref": "hq", "name": "hq"}],
         "users": [{"ref": "ceo", "username": "ceo", "role": 5, "chatrooms": ["hq"], "manages_chatrooms": ["hq"]}],
         "api_keys": []}
    ]})
}

/// How one column authenticates.
#[derive(Debug, Clone)]
pub enum Credential {
    /// `Authorization: Bearer`.
    Jwt(String),
    /// `X-Api-Key`, with an `Origin` header when given.
    Key(String, Option<&'static str>),
    /// No credentials at all.
    Anonymous,
}

impl Credential {
    /// Adds the credential to a request.
    pub fn apply(&self, request: RequestBuilder) -> RequestBuilder {
        match self {
            Self::Jwt(token) => request.bearer_token(token),
            Self::Key(key, None) => request.api_key(key),
            Self::Key(key, Some(origin)) => request.api_key(key).header("origin", *origin),
            Self::Anonymous => request,
        }
    }
}

/// The credential of a column.
pub fn credential(seed: &Seed, caller: &str) -> Credential {
    let jwt = |company: &str, user: &str| Credential::Jwt(seed.token(company, user));
    let key = |key: &str, origin| Credential::Key(seed.key("acme", key), origin);
    match caller {
        "company_manager" => jwt("acme", "boss"),
        "department_manager" => jwt("acme", "dm"),
        "other_department_manager" => jwt("acme", "dmo"),
        "room_manager" => jwt("acme", "rm"),
        "room_member" => jwt("acme", "member"),
        "outsider" => jwt("acme", "outsider"),
        "full_key" => key("full", None),
        "sandbox_key" => key("bot", None),
        "origin_key_no_origin" => key("web", None),
        "origin_key_foreign_origin" => key("web", Some("https://evil.test")),
        "social_client" => key("line", None),
        "other_company" => jwt("globex", "ceo"),
        "anonymous" => Credential::Anonymous,
        other => panic!("no credential for column {other}"),
    }
}
