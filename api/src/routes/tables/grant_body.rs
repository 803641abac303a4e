//! Grant bodies and responses of the permission routes, and the one way a grant is
//! written or revoked (moderator-gated, subject checked in the caller's company).

use super::access;
use super::scope::OpenTable;
use crate::error::{ApiError, ApiResult};
use crate::request::Context;
use crate::state::AppState;
use domain::error::Code;
use domain::tables::grants::{EditMode, Grant, ReadMode, Subject};
use domain::tables::table::TableCommand;
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
    #[schema(value_type = String)]
    pub can_read: ReadMode,
    /// Whether records may be created (default false).
    #[serde(default)]
    pub can_insert: bool,
    /// `all` readable rows, `own` readable rows the grantee created, or `none`
    /// (default).
    #[serde(default = "no_edit")]
    #[schema(value_type = String)]
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
    #[schema(value_type = String)]
    pub can_read: ReadMode,
    /// Whether records may be created.
    pub can_insert: bool,
    /// `all`, `own` or `none`.
    #[schema(value_type = String)]
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

/// Checks that a subject exists in the table's company (a chatroom must be live).
pub async fn check_subject(state: &AppState, table: &OpenTable, subject: Subject) -> ApiResult<()> {
    let sql = match subject {
        Subject::User(_) => "SELECT EXISTS (SELECT 1 FROM users WHERE id = $1 AND company_id = $2)",
        Subject::SocialClient(_) => {
            "SELECT EXISTS (SELECT 1 FROM social_clients WHERE id = $1 AND company_id = $2)"
        }
        Subject::Department(_) => {
            "SELECT EXISTS (SELECT 1 FROM departments WHERE id = $1 AND company_id = $2)"
        }
        Subject::Chatroom(_) => {
            "SELECT EXISTS (SELECT 1 FROM chatrooms WHERE id = $1 AND company_id = $2 AND NOT archived)"
        }
        Subject::Default => return Ok(()),
    };
    let exists: bool = sqlx::query_scalar(sql)
        .bind(subject.id())
        .bind(table.row.company_id)
        .fetch_one(&state.pool)
        .await?;
    if exists {
        Ok(())
    } else {
        Err(ApiError::code(
            Code::SubjectNotFound,
            format!("no {} {} in this company", subject.kind(), subject.id()),
        ))
    }
}

/// Sets a subject's grant and returns it as stored.
pub async fn set(
    state: &AppState,
    ctx: &Context,
    table: &OpenTable,
    subject: Subject,
    grant: Grant,
) -> ApiResult<GrantResponse> {
    check_subject(state, table, subject).await?;
    let targets = access::targets(state, table.row.company_id, &table.all_columns).await?;
    let command = TableCommand::SetGrant {
        subject,
        grant,
        targets,
    };
    table.execute(state, ctx, command).await?;
    let stored = access::grants(state, &[table.row.id])
        .await?
        .into_iter()
        .find(|g| g.subject == subject)
        .ok_or(ApiError::NotFound)?;
    Ok(GrantResponse::of(subject, stored.grant))
}

/// Revokes a subject's grant.
pub async fn revoke(
    state: &AppState,
    ctx: &Context,
    table: &OpenTable,
    subject: Subject,
) -> ApiResult<()> {
    table
        .execute(state, ctx, TableCommand::RevokeGrant { subject })
        .await?;
    Ok(())
}
