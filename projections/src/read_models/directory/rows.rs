//! Rows and tables of the directory read model (migration `0002_directory.sql`).

use crate::read_models::Table;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

pub(super) const COMPANIES: Table = Table {
    name: "companies",
    key: &["id"],
    columns: &[("id", "uuid"), ("name", "text")],
};
pub(super) const DEPARTMENTS: Table = Table {
    name: "departments",
    key: &["id"],
    columns: &[("id", "uuid"), ("company_id", "uuid"), ("name", "text")],
};
pub(super) const USERS: Table = Table {
    name: "users",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("username", "text"),
        ("role", "integer"),
    ],
};
pub(super) const SOCIAL_CLIENTS: Table = Table {
    name: "social_clients",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("platform", "text"),
        ("platform_user_id", "text"),
        ("display_name", "text"),
    ],
};
pub(super) const CHATROOMS: Table = Table {
    name: "chatrooms",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("department_id", "uuid"),
        ("name", "text"),
        ("archived", "boolean"),
        ("jobs", "text[]"),
    ],
};
pub(super) const DEPARTMENT_MEMBERS: Table = Table {
    name: "department_members",
    key: &["department_id", "user_id"],
    columns: &[
        ("department_id", "uuid"),
        ("user_id", "uuid"),
        ("is_member", "boolean"),
        ("is_manager", "boolean"),
    ],
};
pub(super) const CHATROOM_MEMBERS: Table = Table {
    name: "chatroom_members",
    key: &["chatroom_id", "member_kind", "member_id"],
    columns: &[
        ("chatroom_id", "uuid"),
        ("member_kind", "text"),
        ("member_id", "uuid"),
        ("is_member", "boolean"),
        ("is_manager", "boolean"),
        ("is_favourite", "boolean"),
    ],
};
pub(super) const API_KEYS: Table = Table {
    name: "api_keys",
    key: &["id"],
    columns: &[
        ("id", "uuid"),
        ("company_id", "uuid"),
        ("owner_kind", "text"),
        ("owner_id", "uuid"),
        ("secret_sha256", "text"),
        ("scope", "text"),
        ("chatroom_ids", "uuid[]"),
        ("domains", "text[]"),
        ("revoked", "boolean"),
    ],
};

/// Key of the single-id tables.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub(super) struct Id {
    pub id: Uuid,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct CompanyRow {
    pub id: Uuid,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct DepartmentRow {
    pub id: Uuid,
    pub company_id: Uuid,
    pub name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct UserRow {
    pub id: Uuid,
    pub company_id: Uuid,
    pub username: String,
    pub role: i32,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct SocialClientRow {
    pub id: Uuid,
    pub company_id: Uuid,
    pub platform: String,
    pub platform_user_id: String,
    pub display_name: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ChatroomRow {
    pub id: Uuid,
    pub company_id: Uuid,
    pub department_id: Option<Uuid>,
    pub name: String,
    pub archived: bool,
    pub jobs: Option<Vec<String>>,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub(super) struct DepartmentMemberKey {
    pub department_id: Uuid,
    pub user_id: Uuid,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct DepartmentMemberRow {
    pub department_id: Uuid,
    pub user_id: Uuid,
    pub is_member: bool,
    pub is_manager: bool,
}

#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize)]
pub(super) struct ChatroomMemberKey {
    pub chatroom_id: Uuid,
    pub member_kind: String,
    pub member_id: Uuid,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ChatroomMemberRow {
    pub chatroom_id: Uuid,
    pub member_kind: String,
    pub member_id: Uuid,
    pub is_member: bool,
    pub is_manager: bool,
    pub is_favourite: bool,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct ApiKeyRow {
    pub id: Uuid,
    pub company_id: Uuid,
    pub owner_kind: String,
    pub owner_id: Uuid,
    pub secret_sha256: String,
    pub scope: String,
    pub chatroom_ids: Vec<Uuid>,
    pub domains: Vec<String>,
    pub revoked: bool,
}
