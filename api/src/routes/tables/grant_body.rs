//! Grant bodies and responses of the permission routes, and the one way a grant is
//! written or revoked ([`SubjectGrant`]: moderator-gated, subject checked in the
//! caller's company).

use super::access;
use super::columns::SuccessResponse;
use super::gates::Operation;
use super::scope::{Mount, OpenTable, open_table};
use crate::error::{ApiError, ApiResult};
use crate::openapi::enums::string_enum;
use crate::request::Caller;
use crate::state::AppState;
use axum::Json;
use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use domain::error::Code;
use domain::tables::grants::{EditMode, Grant, ReadMode, Subject};
use domain::tables::scope::ScopeKind;
use domain::tables::table::TableCommand;
use domain::validation::ViolationKind;
use projections::read_models::directory::query as directory;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// What a grant gives (the body of the client, department and chatroom grant
/// routes).
#[derive(Debug, Clone, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct GrantBody {
    /// `all`, `own`, `filtered` (by `row_filter`) or `none`.
    #[schema(schema_with = string_enum::<ReadMode>)]
    pub can_read: ReadMode,
    /// Whether records may be created (default false).
    #[serde(default)]
    pub can_insert: bool,
    /// `all` readable rows, `own` readable rows the grantee created, or `none`
    /// (default).
    #[serde(default = "no_edit")]
    #[schema(schema_with = string_enum::<EditMode>)]
    pub can_edit: EditMode,
    /// The row policy of `can_read: filtered` (spec section 2, "Row policy").
    #[schema(value_type = Option<Object>)]
    pub row_filter: Option<Value>,
    /// Columns hidden from the grantee (internal keys or display names).
    #[serde(default)]
    pub hidden_columns: Vec<String>,
    /// Chatroom grants on a department table: the values of the channel scope
    /// column this room may reach.
    #[serde(default)]
    pub scope_values: Vec<String>,
}

fn no_edit() -> EditMode {
    EditMode::None
}

impl From<GrantBody> for Grant {
    fn from(b: GrantBody) -> Self {
        Grant {
            can_read: b.can_read,
            can_insert: b.can_insert,
            can_edit: b.can_edit,
            row_filter: b.row_filter,
            hidden_columns: b.hidden_columns,
            scope_values: b.scope_values,
        }
    }
}

/// A subject as the API names it.
#[derive(Debug, Serialize, ToSchema)]
pub struct SubjectResponse {
    /// `user`, `social_client`, `department`, `chatroom` or `default`.
    pub kind: String,
    /// Its id (absent for the default grant).
    pub id: Option<Uuid>,
}

/// A grant as stored.
#[derive(Debug, Serialize, ToSchema)]
pub struct GrantResponse {
    /// Who it is for.
    pub subject: SubjectResponse,
    /// `all`, `own`, `filtered` or `none`.
    #[schema(schema_with = string_enum::<ReadMode>)]
    pub can_read: ReadMode,
    /// Whether records may be created.
    pub can_insert: bool,
    /// `all`, `own` or `none`.
    #[schema(schema_with = string_enum::<EditMode>)]
    pub can_edit: EditMode,
    /// The row policy.
    #[schema(value_type = Option<Object>)]
    pub row_filter: Option<Value>,
    /// Internal keys of the hidden columns.
    pub hidden_columns: Vec<String>,
    /// Scope values (chatroom grants).
    pub scope_values: Vec<String>,
}

impl GrantResponse {
    /// The response form of a subject's grant.
    pub fn of(subject: Subject, grant: Grant) -> Self {
        Self {
            subject: SubjectResponse {
                kind: subject.kind().into(),
                id: (subject != Subject::Default).then(|| subject.id()),
            },
            can_read: grant.can_read,
            can_insert: grant.can_insert,
            can_edit: grant.can_edit,
            row_filter: grant.row_filter,
            hidden_columns: grant.hidden_columns,
            scope_values: grant.scope_values,
        }
    }
}

/// The grant of one subject on a table opened for its managers: the department,
/// chatroom, social-client, user and default grant routes read, set and revoke
/// through it. The subject comes from the path: `{subject_type}/{subject_id}`,
/// `{client_id}`, the other scope's id on a cross-scope route (a department on a
/// chatroom table, a chatroom on a department table), or the default grant.
pub struct SubjectGrant {
    /// The table, opened for `ManageTable`.
    pub table: OpenTable,
    /// Whose grant.
    pub subject: Subject,
}

impl FromRequestParts<AppState> for SubjectGrant {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &AppState) -> ApiResult<Self> {
        let caller = Caller::from_request_parts(parts, state).await?;
        let mount = Mount::from_request_parts(parts, state).await?;
        let table = open_table(&caller, &mount, Operation::ManageTable).await?;
        let subject = path_subject(&mount)?;
        Ok(Self { table, subject })
    }
}

/// The subject a grant route's path names.
fn path_subject(mount: &Mount) -> ApiResult<Subject> {
    if let Ok(kind) = mount.param("subject_type") {
        let id = mount.uuid("subject_id")?;
        return named_subject(kind, id).map_err(|_| ApiError::NotFound);
    }
    let other_scope = match mount.kind {
        ScopeKind::Chatroom => "department_id",
        ScopeKind::Department => "chatroom_id",
        ScopeKind::Company => "",
    };
    if mount.param("client_id").is_ok() {
        Ok(Subject::SocialClient(mount.uuid("client_id")?))
    } else if mount.param(other_scope).is_ok() {
        let id = mount.uuid(other_scope)?;
        Ok(match mount.kind {
            ScopeKind::Chatroom => Subject::Department(id),
            _ => Subject::Chatroom(id),
        })
    } else {
        Ok(Subject::Default)
    }
}

/// A user, department or chatroom subject named by kind (422 for another kind).
pub fn named_subject(kind: &str, id: Uuid) -> ApiResult<Subject> {
    match kind {
        "user" => Ok(Subject::User(id)),
        "department" => Ok(Subject::Department(id)),
        "chatroom" => Ok(Subject::Chatroom(id)),
        other => Err(ApiError::invalid(
            &["body", "subject_type"],
            ViolationKind::Enum(
                ["user", "department", "chatroom"]
                    .map(String::from)
                    .to_vec(),
            ),
            Some(other.into()),
        )),
    }
}

impl SubjectGrant {
    /// The subject's grant (404 while it has none).
    pub fn read(&self) -> ApiResult<Json<GrantResponse>> {
        let grant = self.table.grant(self.subject).ok_or(ApiError::NotFound)?;
        Ok(Json(GrantResponse::of(self.subject, grant)))
    }

    /// Sets the subject's grant.
    pub async fn set(&self, grant: Grant) -> ApiResult<Json<GrantResponse>> {
        Ok(Json(set(&self.table, self.subject, grant).await?))
    }

    /// Revokes the subject's grant.
    pub async fn revoke(&self) -> ApiResult<Json<SuccessResponse>> {
        let command = TableCommand::RevokeGrant {
            subject: self.subject,
        };
        self.table.execute(command).await?;
        Ok(Json(SuccessResponse {
            message: "Permission revoked".into(),
        }))
    }
}

/// Sets a subject's grant (the subject must exist in the table's company) and
/// returns it as stored.
pub async fn set(table: &OpenTable, subject: Subject, grant: Grant) -> ApiResult<GrantResponse> {
    let state = &table.caller.state;
    let company = table.row.company_id;
    if !directory::subject_in_company(&state.pool, company, subject).await? {
        return Err(ApiError::code(
            Code::SubjectNotFound,
            format!("no {} {} in this company", subject.kind(), subject.id()),
        ));
    }
    let targets = access::targets(state, company, &table.all_columns).await?;
    let command = TableCommand::SetGrant {
        subject,
        grant,
        targets,
    };
    table.execute(command).await?;
    let stored = access::grants(state, &[table.row.id])
        .await?
        .into_iter()
        .find(|g| g.subject == subject)
        .ok_or(ApiError::NotFound)?;
    Ok(GrantResponse::of(subject, stored.grant))
}
