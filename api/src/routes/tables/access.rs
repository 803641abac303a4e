//! The caller's effective permission on a table (spec section 2, "Effective
//! permissions"): the facts the ladder needs (the caller's departments and live
//! rooms, the table's grants, what the policy tokens mean now), the ladder itself
//! ([`domain::tables::access`]) and the channel floor of governed department tables.
//! The result is a pair of conditions — rows read, rows edited — that every record
//! route adds to its query, so narrowing happens in SQL with bound parameters.

use super::scope::TableRow;
use crate::error::ApiResult;
use crate::state::AppState;
use chrono::Utc;
use domain::principal::{Principal, PrincipalType};
use domain::tables::access::{self, Candidates, Source, both, own_rows};
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::formula;
use domain::tables::grants::{EditMode, Grant, ReadMode, Subject};
use domain::tables::policy::{self, Mode, Targets, Tokens};
use domain::tables::query::Condition;
use domain::tables::scope::ScopeKind;
use serde_json::Value;
use sqlx::types::Json;
use std::collections::HashMap;
use uuid::Uuid;

/// Who is asking, as the ladder and the tokens see it.
#[derive(Debug, Clone)]
pub struct Facts {
    /// The creator reference of rows it writes (`user:<id>`,
    /// `social_media_client:<id>`).
    pub reference: String,
    /// Its tagged principal cell (`user:<id>`, `smc:<id>`).
    pub tagged: String,
    /// A social media client.
    pub client: bool,
    /// Its user or client id.
    pub id: Uuid,
    /// Departments it belongs to (users only).
    pub departments: Vec<Uuid>,
    /// Live rooms it belongs to.
    pub rooms: Vec<Uuid>,
    /// Tables whose client-access passphrase it gave (social media clients).
    pub unlocked: Vec<Uuid>,
}

impl Facts {
    /// Whether the table refuses this caller outright: a social media client while
    /// client access is off, or before it gave the table's passphrase.
    pub fn refused_by(&self, table: &TableRow) -> bool {
        self.client
            && (!table.client_access
                || (table.client_passphrase && !self.unlocked.contains(&table.id)))
    }
}

/// Loads the caller's departments and live rooms.
pub async fn facts(state: &AppState, principal: &Principal) -> ApiResult<Facts> {
    let client = principal.principal_type == PrincipalType::SocialMediaClient;
    let (departments, rooms, unlocked): (Vec<Uuid>, Vec<Uuid>, Vec<Uuid>) = sqlx::query_as(
        "SELECT ARRAY(SELECT d.department_id FROM department_members d
                        JOIN departments dd ON dd.id = d.department_id AND dd.company_id = $3
                       WHERE d.user_id = $1 AND $2 = 'user' ORDER BY d.department_id),
                ARRAY(SELECT m.chatroom_id FROM chatroom_members m
                        JOIN chatrooms r ON r.id = m.chatroom_id AND r.company_id = $3 AND NOT r.archived
                       WHERE m.member_kind = $2 AND m.member_id = $1 ORDER BY m.chatroom_id),
                ARRAY(SELECT u.table_id FROM custom_table_client_unlocks u
                       WHERE u.client_id = $1 AND $4 ORDER BY u.table_id)",
    )
    .bind(principal.principal_id)
    .bind(principal.principal_type.as_str())
    .bind(principal.company_id)
    .bind(client)
    .fetch_one(&state.pool)
    .await?;
    let tag = if client { "smc" } else { "user" };
    Ok(Facts {
        reference: principal.reference(),
        tagged: format!("{tag}:{}", principal.principal_id),
        client,
        id: principal.principal_id,
        departments,
        rooms,
        unlocked,
    })
}

/// A grant of a table.
#[derive(Debug, Clone)]
pub struct GrantRow {
    /// The table.
    pub table_id: Uuid,
    /// Who it is for.
    pub subject: Subject,
    /// What it gives.
    pub grant: Grant,
}

fn subject(kind: &str, id: Uuid) -> Option<Subject> {
    Some(match kind {
        "user" => Subject::User(id),
        "social_client" => Subject::SocialClient(id),
        "department" => Subject::Department(id),
        "chatroom" => Subject::Chatroom(id),
        "default" => Subject::Default,
        _ => return None,
    })
}

/// The grants of these tables, oldest first.
pub async fn grants(state: &AppState, table_ids: &[Uuid]) -> ApiResult<Vec<GrantRow>> {
    let rows: Vec<(Uuid, String, Uuid, Json<Grant>)> = sqlx::query_as(
        "SELECT table_id, subject_kind, subject_id, grant_body FROM custom_table_grants
          WHERE table_id = ANY($1) ORDER BY created_at, subject_kind, subject_id",
    )
    .bind(table_ids)
    .fetch_all(&state.pool)
    .await?;
    Ok(rows
        .into_iter()
        .filter_map(|(table_id, kind, id, grant)| {
            Some(GrantRow {
                table_id,
                subject: subject(&kind, id)?,
                grant: grant.0,
            })
        })
        .collect())
}

/// The channel floor of a table for a caller.
#[derive(Debug, Clone, PartialEq)]
pub enum Floor {
    /// Not governed by a channel policy (or the caller manages the table).
    Open,
    /// Governed: rows whose scope column holds one of the values of the caller's
    /// eligible rooms.
    Rooms {
        /// Internal key of the scope column.
        column: String,
        /// The rows of the floor.
        condition: Condition,
        /// The values, canonical for the column.
        values: Vec<Value>,
    },
    /// Governed, and the caller belongs to no live room holding a grant.
    NoRoom,
}

/// The caller's effective permission on one table.
#[derive(Debug, Clone)]
pub struct Access {
    /// The deciding step; `None` when no step matches.
    pub source: Option<Source>,
    /// Rows read (before the floor).
    pub read: Condition,
    /// Rows edited and deleted (before the floor).
    pub edit: Condition,
    /// Whether records may be created.
    pub insert: bool,
    /// The read mode, summarised.
    pub read_mode: ReadMode,
    /// The edit mode, summarised.
    pub edit_mode: EditMode,
    /// The row policy of the deciding grant(s).
    pub row_filter: Option<Value>,
    /// Internal keys of the hidden columns and of the formulas that read one.
    pub hidden: Vec<String>,
    /// Rooms whose grants were folded.
    pub rooms: Vec<Uuid>,
    /// The channel floor.
    pub floor: Floor,
}

impl Access {
    fn floor_condition(&self) -> Condition {
        match &self.floor {
            Floor::Open => Condition::Const(Some(true)),
            Floor::Rooms { condition, .. } => condition.clone(),
            Floor::NoRoom => Condition::Const(Some(false)),
        }
    }

    /// The rows the caller sees.
    pub fn visible(&self) -> Condition {
        both(self.read.clone(), self.floor_condition())
    }

    /// The rows the caller may edit and delete.
    pub fn editable(&self) -> Condition {
        both(self.edit.clone(), self.floor_condition())
    }

    /// Whether the caller sees every row (no query needed to count them).
    pub fn sees_everything(&self) -> bool {
        self.visible() == Condition::Const(Some(true))
    }

    /// Whether the caller reads rows at all.
    pub fn reads(&self) -> bool {
        self.read_mode != ReadMode::None
    }

    /// Whether the caller edits rows at all.
    pub fn edits(&self) -> bool {
        self.edit_mode != EditMode::None
    }
}

/// What the ladder needs beside the grants: the caller and whether it manages the
/// table or enters its owning scope.
pub struct Standing<'a> {
    /// The caller.
    pub caller: &'a Facts,
    /// It manages the table.
    pub manager: bool,
    /// It enters the owning scope (the default grant applies to it).
    pub scope_entry: bool,
}

/// Per-read context shared by the tables of one request.
pub struct ReadContext {
    /// What the policy tokens mean now.
    pub tokens: Tokens,
    /// Columns of the tables link leaves may reach.
    pub targets: Targets,
}

/// Builds the read context for the policies of these grants: `$me` always,
/// `$me.department` and link targets only when a policy needs them.
pub async fn read_context(
    state: &AppState,
    company_id: Uuid,
    caller: &Facts,
    grants: &[GrantRow],
    columns: &[ColumnDef],
) -> ApiResult<ReadContext> {
    let filters: Vec<&Value> = grants
        .iter()
        .filter_map(|g| g.grant.row_filter.as_ref())
        .collect();
    let mut me = vec![caller.tagged.clone()];
    me.extend(caller.rooms.iter().map(|r| format!("room:{r}")));
    let me_department = if filters
        .iter()
        .any(|f| policy::mentions(f, "$me.department"))
    {
        let cells: Vec<String> = sqlx::query_scalar(
            "SELECT 'user:' || m.user_id FROM department_members m WHERE m.department_id = ANY($1)
             UNION SELECT 'room:' || r.id FROM chatrooms r
                    WHERE r.department_id = ANY($1) AND r.company_id = $2 AND NOT r.archived
             LIMIT 1001",
        )
        .bind(&caller.departments)
        .bind(company_id)
        .fetch_all(&state.pool)
        .await?;
        Some(cells)
    } else {
        None
    };
    let targets = if filters.is_empty() {
        Targets::new()
    } else {
        targets(state, company_id, columns).await?
    };
    let now = Utc::now();
    Ok(ReadContext {
        tokens: Tokens {
            today: now.date_naive(),
            now,
            me: Some(me),
            me_department,
        },
        targets,
    })
}

/// Columns of the tables the link columns among `columns` target (in the company),
/// for the link leaves of row policies. A target that no longer exists is absent.
pub async fn targets(
    state: &AppState,
    company_id: Uuid,
    columns: &[ColumnDef],
) -> ApiResult<Targets> {
    let link_targets: Vec<Uuid> = columns
        .iter()
        .filter(|c| c.column_type == ColumnType::Link)
        .filter_map(|c| c.target_table_id)
        .collect();
    let mut targets = Targets::new();
    if link_targets.is_empty() {
        return Ok(targets);
    }
    let rows: Vec<(Uuid, Option<Json<ColumnDef>>)> = sqlx::query_as(
        "SELECT t.id, c.definition FROM custom_tables t
           LEFT JOIN custom_table_columns c ON c.table_id = t.id
          WHERE t.id = ANY($1) AND t.company_id = $2 ORDER BY t.id, c.position",
    )
    .bind(&link_targets)
    .bind(company_id)
    .fetch_all(&state.pool)
    .await?;
    for (table_id, column) in rows {
        let slot = targets.entry(table_id).or_default();
        slot.extend(column.map(|c| c.0));
    }
    Ok(targets)
}

/// Resolves the caller's access to one table from its grants.
pub fn resolve(
    table: &TableRow,
    columns: &[ColumnDef],
    grants: &[GrantRow],
    standing: &Standing<'_>,
    context: &ReadContext,
) -> Access {
    let caller = standing.caller;
    let own: Vec<&GrantRow> = grants.iter().filter(|g| g.table_id == table.id).collect();
    let find = |subject: Subject| own.iter().find(|g| g.subject == subject).map(|g| &g.grant);
    let refused = caller.refused_by(table);
    let standard = Grant::standard_default();
    let candidates = if refused {
        Candidates::default()
    } else {
        Candidates {
            manager: standing.manager,
            user: find(if caller.client {
                Subject::SocialClient(caller.id)
            } else {
                Subject::User(caller.id)
            }),
            departments: own
                .iter()
                .filter(|g| matches!(g.subject, Subject::Department(d) if caller.departments.contains(&d)))
                .map(|g| &g.grant)
                .collect(),
            chatrooms: own
                .iter()
                .filter_map(|g| match g.subject {
                    Subject::Chatroom(r) if caller.rooms.contains(&r) => Some((r, &g.grant)),
                    _ => None,
                })
                .collect(),
            default: standing
                .scope_entry
                .then(|| find(Subject::Default).unwrap_or(&standard)),
        }
    };
    let floor = floor(table, columns, &own, standing);
    let Some(resolved) = access::resolve(candidates) else {
        return Access {
            source: None,
            read: Condition::Const(Some(false)),
            edit: Condition::Const(Some(false)),
            insert: false,
            read_mode: ReadMode::None,
            edit_mode: EditMode::None,
            row_filter: None,
            hidden: Vec::new(),
            rooms: Vec::new(),
            floor,
        };
    };
    let mine = own_rows(&caller.reference);
    let compile = |policy: &Value| {
        policy::compile(
            policy,
            columns,
            &context.targets,
            Mode::Read(&context.tokens),
        )
        .unwrap_or(Condition::Const(None))
    };
    Access {
        source: Some(resolved.source),
        read: resolved.read(&mine, compile),
        edit: resolved.edit(&mine, compile),
        insert: resolved.can_insert(),
        read_mode: resolved.read_mode(),
        edit_mode: resolved.edit_mode(),
        row_filter: resolved.row_filter(),
        hidden: formula::with_dependents(columns, resolved.hidden()),
        rooms: resolved.rooms.clone(),
        floor,
    }
}

/// The channel floor: table managers are exempt; others get the union of the scope
/// values of every live room they belong to that holds a grant on the table.
fn floor(table: &TableRow, columns: &[ColumnDef], grants: &[&GrantRow], s: &Standing<'_>) -> Floor {
    let Some(column) = table.channel_scope_column.clone() else {
        return Floor::Open;
    };
    if s.manager || table.scope_kind != ScopeKind::Department {
        return Floor::Open;
    }
    let eligible: Vec<&Grant> = grants
        .iter()
        .filter(|g| matches!(g.subject, Subject::Chatroom(r) if s.caller.rooms.contains(&r)))
        .map(|g| &g.grant)
        .collect();
    if eligible.is_empty() {
        return Floor::NoRoom;
    }
    let mut values: Vec<String> = eligible
        .iter()
        .flat_map(|g| g.scope_values.iter().cloned())
        .collect();
    values.sort();
    values.dedup();
    let (condition, values) = policy::floor(columns, &column, &values);
    Floor::Rooms {
        column,
        condition,
        values,
    }
}

/// Access of every table of a page, for one caller whose facts and the tables'
/// grants the caller of this function loaded (one query each).
pub async fn page_access(
    state: &AppState,
    principal: &Principal,
    caller: &Facts,
    grants: &[GrantRow],
    tables: &[(TableRow, Vec<ColumnDef>, bool, bool)],
) -> ApiResult<HashMap<Uuid, Access>> {
    let all_columns: Vec<ColumnDef> = tables.iter().flat_map(|(_, c, ..)| c.clone()).collect();
    let context = read_context(state, principal.company_id, caller, grants, &all_columns).await?;
    Ok(tables
        .iter()
        .map(|(table, columns, manager, scope_entry)| {
            let standing = Standing {
                caller,
                manager: *manager,
                scope_entry: *scope_entry,
            };
            (
                table.id,
                resolve(table, columns, grants, &standing, &context),
            )
        })
        .collect())
}
