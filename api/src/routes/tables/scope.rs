//! The three scope mounts and the lookup of a table through them.
//!
//! A request names a scope by its mount (`/chatroom/{chatroom_id}`,
//! `/department/{department_id}`, `/company`, or a scope name alone on the
//! scope-id-free routes). [`open_table`] finds the table in the caller's company,
//! checks that the mount is its owning scope, loads the caller's [`Standing`] and
//! applies the operation's gate: anything not visible answers the uniform 404, a
//! visible table without the gate answers 403.

use super::access::{self, Access, GrantRow};
use super::gates::{self, Operation, Standing};
use crate::access::INSUFFICIENT;
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use crate::state::AppState;
use axum::extract::{FromRequestParts, OriginalUri, Path};
use axum::http::request::Parts;
use domain::principal::PrincipalType;
use domain::tables::column::ColumnDef;
use domain::tables::grants::{Grant, Subject};
use domain::tables::scope::{ScopeKind, ScopeRef};
use domain::tables::table::{CustomTable, TableCommand, ViewDef};
use projections::Committed;
use projections::read_models::tables::query as tables;
pub use projections::read_models::tables::query::TableRow;
use projections::read_models::tables::read::{Gate, Selection, TableHandle};
use std::collections::HashMap;
use uuid::Uuid;

/// The prefix of every custom-table route.
pub const PREFIX: &str = "/private/module/custom_tables";

/// The mount a request came through, with its path parameters.
#[derive(Debug, Clone)]
pub struct Mount {
    /// Scope kind.
    pub kind: ScopeKind,
    /// Chatroom or department id; `None` on the company mount and on the
    /// scope-id-free routes.
    pub id: Option<Uuid>,
    params: HashMap<String, String>,
}

impl<S: Send + Sync> FromRequestParts<S> for Mount {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let path = parts
            .extensions
            .get::<OriginalUri>()
            .map_or_else(|| parts.uri.path().to_string(), |o| o.path().to_string());
        let rest = path.strip_prefix(PREFIX).unwrap_or(&path);
        let kind = rest
            .trim_start_matches('/')
            .split('/')
            .next()
            .and_then(ScopeKind::parse)
            .ok_or(ApiError::NotFound)?;
        let Path(params) = Path::<HashMap<String, String>>::from_request_parts(parts, state)
            .await
            .map_err(|_| ApiError::NotFound)?;
        let id_param = match kind {
            ScopeKind::Chatroom => params.get("chatroom_id"),
            ScopeKind::Department => params.get("department_id"),
            ScopeKind::Company => None,
        };
        let id = id_param
            .map(|s| Uuid::parse_str(s).map_err(|_| ApiError::NotFound))
            .transpose()?;
        Ok(Self { kind, id, params })
    }
}

impl Mount {
    /// The owning scope's mount of a table, for writes that arrive without one
    /// (callback writes act through the table's own scope).
    pub fn owning(table: &TableRow) -> Self {
        let id = (table.scope_kind != ScopeKind::Company).then_some(table.scope_id);
        Self {
            kind: table.scope_kind,
            id,
            params: HashMap::new(),
        }
    }

    /// A UUID path parameter; a malformed one answers 422.
    pub fn uuid(&self, name: &str) -> ApiResult<Uuid> {
        let raw = self.params.get(name).ok_or(ApiError::NotFound)?;
        Uuid::parse_str(raw).map_err(|_| {
            ApiError::invalid(
                &["path", name],
                domain::validation::ViolationKind::Rule {
                    kind: "uuid_parsing",
                    message: "Input should be a valid UUID".into(),
                },
                Some(raw.clone().into()),
            )
        })
    }

    /// A string path parameter.
    pub fn param(&self, name: &str) -> ApiResult<&str> {
        self.params
            .get(name)
            .map(String::as_str)
            .ok_or(ApiError::NotFound)
    }

    /// The owning scope this mount names, for a caller of `company_id`.
    pub fn scope(&self, company_id: Uuid) -> Option<ScopeRef> {
        let id = match self.kind {
            ScopeKind::Company => company_id,
            _ => self.id?,
        };
        Some(ScopeRef {
            kind: self.kind,
            id,
        })
    }
}

/// Facts about a scope: the caller's standing and, for a room, its department.
pub struct ScopeFacts {
    /// The caller's standing (without `table_creator`).
    pub standing: Standing,
    /// The room's department (chatroom scope).
    pub room_department: Option<Uuid>,
}

#[derive(sqlx::FromRow)]
struct FactsRow {
    exists: bool,
    department_id: Option<Uuid>,
    member: bool,
    manager: bool,
    department_manager: bool,
}

/// Loads the caller's standing in a scope of their company; `None` when the scope
/// does not exist there (or the room is archived).
pub async fn scope_facts(caller: &Caller, scope: ScopeRef) -> ApiResult<Option<ScopeFacts>> {
    let user = caller.principal.principal_type == PrincipalType::User;
    let base = Standing {
        user,
        company_manager: caller.principal.is_company_manager(),
        ..Default::default()
    };
    let kind = caller.principal.principal_type.as_str();
    let row: Option<FactsRow> = match scope.kind {
        ScopeKind::Company => {
            return Ok((scope.id == caller.principal.company_id).then_some(ScopeFacts { standing: base, room_department: None }));
        }
        ScopeKind::Chatroom => sqlx::query_as(
            "SELECT true AS exists, r.department_id,
                    coalesce(m.is_member, false) AS member, coalesce(m.is_manager, false) AS manager,
                    EXISTS (SELECT 1 FROM department_members d
                             WHERE d.department_id = r.department_id AND d.user_id = $3 AND d.is_manager
                               AND $4 = 'user') AS department_manager
               FROM chatrooms r
               LEFT JOIN chatroom_members m ON m.chatroom_id = r.id AND m.member_kind = $4 AND m.member_id = $3
              WHERE r.id = $1 AND r.company_id = $2 AND NOT r.archived",
        ),
        ScopeKind::Department => sqlx::query_as(
            "SELECT true AS exists, NULL::uuid AS department_id,
                    coalesce(m.is_member, false) AND $4 = 'user' AS member,
                    coalesce(m.is_manager, false) AND $4 = 'user' AS manager, false AS department_manager
               FROM departments d
               LEFT JOIN department_members m ON m.department_id = d.id AND m.user_id = $3
              WHERE d.id = $1 AND d.company_id = $2",
        ),
    }
    .bind(scope.id)
    .bind(caller.principal.company_id)
    .bind(caller.principal.principal_id)
    .bind(kind)
    .fetch_optional(caller.pool())
    .await?;
    Ok(row.filter(|r| r.exists).map(|r| ScopeFacts {
        standing: Standing {
            member: r.member,
            manager: r.manager,
            room_department_manager: r.department_manager,
            ..base
        },
        room_department: r.department_id,
    }))
}

/// The caller's standing in a mount's scope, gated for `operation`; 404 when the
/// scope is not visible, 403 when visible without the gate.
pub async fn enter_scope(
    caller: &Caller,
    mount: &Mount,
    operation: Operation,
) -> ApiResult<(ScopeRef, ScopeFacts)> {
    let scope = mount
        .scope(caller.principal.company_id)
        .ok_or(ApiError::NotFound)?;
    let facts = scope_facts(caller, scope)
        .await?
        .ok_or(ApiError::NotFound)?;
    if !gates::entry(scope.kind, &facts.standing) {
        return Err(ApiError::NotFound);
    }
    if !gates::allows(operation, scope.kind, &facts.standing) {
        return Err(ApiError::Forbidden(INSUFFICIENT));
    }
    Ok((scope, facts))
}

/// An opened table: its row, columns, the caller's standing, scope facts and
/// effective permission.
pub struct OpenTable {
    /// The registry row.
    pub row: TableRow,
    /// The columns the caller may see, in order (hidden columns are absent).
    pub columns: Vec<ColumnDef>,
    /// Every column, hidden ones included (defaults, views, row policies).
    pub all_columns: Vec<ColumnDef>,
    /// Who opened it (commands run as this caller).
    pub caller: Caller,
    /// The caller's standing (with `table_creator`).
    pub standing: Standing,
    /// The owning scope.
    pub scope: ScopeRef,
    /// The room's department, for chatroom tables.
    pub room_department: Option<Uuid>,
    /// The caller's effective permission.
    pub access: Access,
    /// The table's grants, oldest first.
    pub grants: Vec<GrantRow>,
    /// What the caller may read of the tables its rollups and lookups read.
    pub link_gates: Vec<Gate>,
    /// Opened to make a Command's declared effect: its writes are not raw ones
    /// (an agent's pass a table that takes agent writes through Commands only).
    pub through_command: bool,
}

impl OpenTable {
    /// Whether the caller manages the table.
    pub fn is_moderator(&self) -> bool {
        gates::moderator(self.scope.kind, &self.standing)
    }

    /// The read handle of the records (visible columns only).
    pub fn handle(&self) -> TableHandle {
        TableHandle {
            company_id: self.row.company_id,
            table_id: self.row.id,
            columns: self.columns.clone(),
            gates: self.link_gates.clone(),
        }
    }

    /// Whether a computed column reads a table the caller may not read.
    pub fn restricted(&self, column: &ColumnDef) -> bool {
        column
            .reads_tables()
            .iter()
            .any(|t| !self.link_gates.iter().any(|g| g.table_id == *t))
    }

    /// Runs a command on the table as the caller.
    pub async fn execute(&self, command: TableCommand) -> ApiResult<Committed<CustomTable>> {
        self.caller
            .command::<CustomTable>(self.row.id, command)
            .await
    }

    /// A subject's grant.
    pub fn grant(&self, subject: Subject) -> Option<Grant> {
        self.grants
            .iter()
            .find(|g| g.subject == subject)
            .map(|g| g.grant.clone())
    }

    /// The default grant (the built-in one while none was set).
    pub fn default_grant(&self) -> Grant {
        self.grant(Subject::Default)
            .unwrap_or_else(Grant::standard_default)
    }

    /// Whether the caller may see and use a stored view: not when it filters or sorts
    /// by a column hidden from the caller.
    pub fn sees_view(&self, view: &ViewDef) -> bool {
        !self
            .access
            .hidden
            .iter()
            .any(|key| view.filters_or_sorts_by(key))
    }

    /// A selection of the rows the caller sees, each flagged with whether the caller
    /// may edit it.
    pub fn selection(&self) -> Selection {
        Selection {
            access: Some(self.access.visible()),
            flag: Some(self.access.editable()),
            ..Default::default()
        }
    }
}

/// Loads a table's row in a company.
pub async fn table_row(
    state: &AppState,
    company_id: Uuid,
    table_id: Uuid,
) -> ApiResult<Option<TableRow>> {
    Ok(tables::table(&state.pool, company_id, table_id).await?)
}

/// The columns of a table, in order.
pub async fn table_columns(state: &AppState, table_id: Uuid) -> ApiResult<Vec<ColumnDef>> {
    Ok(tables::columns(&state.pool, table_id).await?)
}

/// What a table route answers (404) for a table that is missing, in another
/// company or scope, or hidden from the caller; the spec's text, the same for all.
pub const TABLE_NOT_FOUND: &str = "Custom table not found";

/// Opens the table the mount's `table_id` names, gated for `operation`.
pub async fn open_table(
    caller: &Caller,
    mount: &Mount,
    operation: Operation,
) -> ApiResult<OpenTable> {
    let table_id = mount
        .uuid("table_id")
        .map_err(|_| ApiError::Missing(TABLE_NOT_FOUND))?;
    open_table_id(caller, mount, table_id, operation).await
}

/// Opens a table by id through a mount (the id-free mounts take the table's scope),
/// with what the caller may read of the tables its rollups and lookups read.
pub async fn open_table_id(
    caller: &Caller,
    mount: &Mount,
    table_id: Uuid,
    operation: Operation,
) -> ApiResult<OpenTable> {
    let mut table = open_plain(caller, mount, table_id, operation).await?;
    table.link_gates = link_gates(caller, &table.columns).await?;
    Ok(table)
}

/// Opens a table without looking at the tables its computed columns read.
async fn open_plain(
    caller: &Caller,
    mount: &Mount,
    table_id: Uuid,
    operation: Operation,
) -> ApiResult<OpenTable> {
    let row = table_row(&caller.state, caller.principal.company_id, table_id)
        .await?
        .ok_or(ApiError::Missing(TABLE_NOT_FOUND))?;
    let kind = row.scope_kind;
    let same_scope = kind == mount.kind && mount.id.is_none_or(|id| id == row.scope_id);
    if !same_scope {
        return Err(ApiError::Missing(TABLE_NOT_FOUND));
    }
    let scope = ScopeRef {
        kind,
        id: row.scope_id,
    };
    let ids = [row.id];
    let (facts, all_columns, who, grants) = tokio::try_join!(
        scope_facts(caller, scope),
        table_columns(&caller.state, row.id),
        access::facts(&caller.state, &caller.principal),
        access::grants(&caller.state, &ids)
    )?;
    let facts = facts.ok_or(ApiError::Missing(TABLE_NOT_FOUND))?;
    let mut standing = Standing {
        table_creator: row.created_by == caller.principal.reference(),
        ..facts.standing
    };
    let company = caller.principal.company_id;
    let context = access::read_context(&caller.state, company, &who, &grants, &all_columns).await?;
    let scope_entry = gates::entry(kind, &standing);
    let ladder = access::Standing {
        caller: &who,
        manager: gates::moderator(kind, &standing),
        scope_entry,
    };
    let access = access::resolve(&row, &all_columns, &grants, &ladder, &context);
    // A table is invisible to a caller that neither enters its owning scope nor
    // holds a grant, and to every social media client while client access is off
    // (or before it gave the table's passphrase).
    let refused_client = who.refused_by(&row);
    if refused_client || (!scope_entry && access.source.is_none()) {
        return Err(ApiError::Missing(TABLE_NOT_FOUND));
    }
    standing.read = access.reads();
    standing.insert = access.insert;
    standing.edit = access.edits();
    if !gates::allows(operation, kind, &standing) {
        return Err(ApiError::Forbidden(INSUFFICIENT));
    }
    let columns = all_columns
        .iter()
        .filter(|c| !access.hidden.contains(&c.key))
        .cloned()
        .collect();
    Ok(OpenTable {
        row,
        columns,
        all_columns,
        caller: caller.clone(),
        standing,
        scope,
        room_department: facts.room_department,
        access,
        grants,
        link_gates: Vec::new(),
        through_command: false,
    })
}

/// What the caller may read of each table the visible rollups and lookups read
/// through links; a table the caller may not open is left out (its values read as
/// empty, and the columns answer `restricted`).
pub async fn link_gates(caller: &Caller, columns: &[ColumnDef]) -> ApiResult<Vec<Gate>> {
    let mut read: Vec<Uuid> = Vec::new();
    for table in columns.iter().flat_map(ColumnDef::reads_tables) {
        if !read.contains(&table) {
            read.push(table);
        }
    }
    let mut gates = Vec::new();
    for table_id in read {
        let Some(row) = table_row(&caller.state, caller.principal.company_id, table_id).await?
        else {
            continue;
        };
        match open_plain(caller, &Mount::owning(&row), table_id, Operation::ReadRows).await {
            Ok(target) => gates.push(Gate {
                table_id,
                rows: Some(target.access.visible()),
                columns: target.columns,
            }),
            Err(ApiError::NotFound | ApiError::Missing(_) | ApiError::Forbidden(_)) => {}
            Err(error) => return Err(error),
        }
    }
    Ok(gates)
}
