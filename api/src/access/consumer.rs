//! Consumer scopes of secrets and approvals (spec rule 6: "Secrets and approvals
//! need a consumer-scope manager"): a room is managed along the chatroom manager
//! ladder, a department by its managers and the company's managers, the company by
//! its managers. Anything outside the caller's company answers 404.

use super::{INSUFFICIENT, Room, scope};
use crate::error::{ApiError, ApiResult};
use crate::request::Caller;
use domain::environments::environment::OwnerScope;
use domain::secrets::ConsumerScope;
use projections::read_models::directory::query as directory;
use std::collections::HashSet;
use uuid::Uuid;

/// A consumer scope the caller manages.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Consumer {
    /// Room, department or company.
    pub scope: ConsumerScope,
    /// Its id.
    pub id: Uuid,
}

impl Consumer {
    /// The scope if the caller manages it: 404 when it is not a live scope of the
    /// caller's company (or a room the caller cannot see), 403 when the caller sees
    /// it but does not manage it.
    pub async fn managed(caller: &Caller, scope: ConsumerScope, id: Uuid) -> ApiResult<Self> {
        let company = caller.principal.company_id;
        match scope {
            ConsumerScope::Chatroom => {
                Room::managed(caller, id).await?;
            }
            ConsumerScope::Department => {
                if !directory::department_in_company(caller.pool(), company, id).await? {
                    return Err(ApiError::NotFound);
                }
                if !scope::manages(caller, OwnerScope::Department, Some(id)).await? {
                    return Err(ApiError::Forbidden(INSUFFICIENT));
                }
            }
            ConsumerScope::Company => {
                if id != company {
                    return Err(ApiError::NotFound);
                }
                super::require_company_manager(&caller.principal)?;
            }
        }
        Ok(Self { scope, id })
    }
}

/// Every consumer scope the caller manages, for filtering management lists.
pub struct Manageable {
    all: bool,
    rooms: HashSet<Uuid>,
    departments: HashSet<Uuid>,
}

/// Most rooms or departments one listing considers.
const SCOPE_CAP: i64 = 5000;

impl Manageable {
    /// The caller's manageable scopes.
    pub async fn of(caller: &Caller) -> ApiResult<Self> {
        if caller.principal.is_company_manager() {
            return Ok(Self {
                all: true,
                rooms: HashSet::new(),
                departments: HashSet::new(),
            });
        }
        let pool = caller.pool();
        let rooms = directory::managed_room_ids(pool, &caller.principal, SCOPE_CAP).await?;
        let departments =
            directory::manageable_department_ids(pool, &caller.principal, SCOPE_CAP).await?;
        Ok(Self {
            all: false,
            rooms: rooms.into_iter().collect(),
            departments: departments.into_iter().collect(),
        })
    }

    /// Whether the caller manages the scope (`scope` in its wire form).
    pub fn includes(&self, scope: &str, id: Uuid) -> bool {
        self.all
            || match scope {
                "chatroom" => self.rooms.contains(&id),
                "department" => self.departments.contains(&id),
                _ => false,
            }
    }
}
