//! The `directory` projection: companies, departments, users, social media clients,
//! chatrooms, memberships and API keys, as auth and scope checks read them.

mod change;
pub mod identity;
pub mod jobs;
pub mod query;
mod rows;

use crate::log::StoredEvent;
use crate::projection::{MemoryFold, Projection};
use crate::read_models::RowSet;
use async_trait::async_trait;
use change::*;
use domain::directory::api_key::ApiKeyEvent;
use domain::directory::chatroom::ChatroomEvent;
use domain::directory::company::CompanyEvent;
use domain::directory::department::DepartmentEvent;
use domain::directory::social_client::SocialClientEvent;
use domain::directory::user::UserEvent;
use rows::*;
use sqlx::PgConnection;
use uuid::Uuid;

/// Projects the directory aggregates.
pub struct DirectoryProjection;

/// The rows one batch touches.
#[derive(Default)]
struct Workset {
    companies: RowSet<Id, CompanyRow>,
    departments: RowSet<Id, DepartmentRow>,
    users: RowSet<Id, UserRow>,
    social_clients: RowSet<Id, SocialClientRow>,
    chatrooms: RowSet<Id, ChatroomRow>,
    department_members: RowSet<DepartmentMemberKey, DepartmentMemberRow>,
    chatroom_members: RowSet<ChatroomMemberKey, ChatroomMemberRow>,
    api_keys: RowSet<Id, ApiKeyRow>,
}

impl Workset {
    async fn load(conn: &mut PgConnection, changes: &[Change]) -> anyhow::Result<Self> {
        let keys = Keys::of(changes);
        let department_members = DEPARTMENT_MEMBERS
            .load::<_, DepartmentMemberRow>(conn, &keys.department_members)
            .await?
            .into_iter()
            .map(|r| {
                (
                    DepartmentMemberKey {
                        department_id: r.department_id,
                        user_id: r.user_id,
                    },
                    r,
                )
            });
        let chatroom_members = CHATROOM_MEMBERS
            .load::<_, ChatroomMemberRow>(conn, &keys.chatroom_members)
            .await?
            .into_iter()
            .map(|r| {
                let key = ChatroomMemberKey {
                    chatroom_id: r.chatroom_id,
                    member_kind: r.member_kind.clone(),
                    member_id: r.member_id,
                };
                (key, r)
            });
        Ok(Self {
            department_members: RowSet::loaded(department_members),
            chatroom_members: RowSet::loaded(chatroom_members),
            companies: by_id(
                COMPANIES
                    .load::<_, CompanyRow>(conn, &keys.companies)
                    .await?,
                |r| r.id,
            ),
            departments: by_id(
                DEPARTMENTS
                    .load::<_, DepartmentRow>(conn, &keys.departments)
                    .await?,
                |r| r.id,
            ),
            users: by_id(USERS.load::<_, UserRow>(conn, &keys.users).await?, |r| r.id),
            social_clients: by_id(
                SOCIAL_CLIENTS
                    .load::<_, SocialClientRow>(conn, &keys.social_clients)
                    .await?,
                |r| r.id,
            ),
            chatrooms: by_id(
                CHATROOMS
                    .load::<_, ChatroomRow>(conn, &keys.chatrooms)
                    .await?,
                |r| r.id,
            ),
            api_keys: by_id(
                API_KEYS.load::<_, ApiKeyRow>(conn, &keys.api_keys).await?,
                |r| r.id,
            ),
        })
    }

    /// The rows held, over every table.
    fn rows(&self) -> usize {
        self.companies.len()
            + self.departments.len()
            + self.users.len()
            + self.social_clients.len()
            + self.chatrooms.len()
            + self.department_members.len()
            + self.chatroom_members.len()
            + self.api_keys.len()
    }

    fn fold(&mut self, change: Change) {
        match change {
            Change::Company(id, event) => match event {
                CompanyEvent::CompanyRegistered { name, .. }
                | CompanyEvent::CompanyRenamed { name } => {
                    self.companies
                        .upsert_with(Id { id }, || CompanyRow {
                            id,
                            name: String::new(),
                        })
                        .name = name;
                }
            },
            Change::Department(id, event) => self.fold_department(id, event),
            Change::User(id, event) => match event {
                UserEvent::UserRegistered {
                    company_id,
                    username,
                    role,
                    ..
                } => {
                    self.users.upsert_with(Id { id }, || UserRow {
                        id,
                        company_id,
                        username,
                        role,
                    });
                }
                UserEvent::UserRenamed { username } => {
                    if let Some(row) = self.users.get_mut(&Id { id }) {
                        row.username = username;
                    }
                }
                UserEvent::UserRoleChanged { role } => {
                    if let Some(row) = self.users.get_mut(&Id { id }) {
                        row.role = role;
                    }
                }
            },
            Change::SocialClient(id, event) => match event {
                SocialClientEvent::SocialClientRegistered {
                    company_id,
                    platform,
                    platform_user_id,
                    display_name,
                    ..
                } => {
                    let row = SocialClientRow {
                        id,
                        company_id,
                        platform,
                        platform_user_id,
                        display_name,
                    };
                    self.social_clients.upsert_with(Id { id }, || row);
                }
                SocialClientEvent::SocialClientUpdated {
                    platform,
                    platform_user_id,
                    display_name,
                } => {
                    if let Some(row) = self.social_clients.get_mut(&Id { id }) {
                        (row.platform, row.platform_user_id, row.display_name) =
                            (platform, platform_user_id, display_name);
                    }
                }
            },
            Change::Chatroom(id, event) => self.fold_chatroom(id, event),
            Change::ApiKey(id, event) => match event {
                ApiKeyEvent::ApiKeyIssued {
                    company_id,
                    owner,
                    secret_sha256,
                    access,
                    ..
                } => {
                    let row = ApiKeyRow {
                        id,
                        company_id,
                        owner_kind: owner.kind.as_str().into(),
                        owner_id: owner.id,
                        secret_sha256,
                        scope: scope_name(access.scope),
                        chatroom_ids: access.chatroom_ids.into_iter().collect(),
                        domains: access.domains,
                        revoked: false,
                    };
                    self.api_keys.upsert_with(Id { id }, || row);
                }
                ApiKeyEvent::ApiKeyAccessChanged { access } => {
                    if let Some(row) = self.api_keys.get_mut(&Id { id }) {
                        row.scope = scope_name(access.scope);
                        row.chatroom_ids = access.chatroom_ids.into_iter().collect();
                        row.domains = access.domains;
                    }
                }
                ApiKeyEvent::ApiKeyRevoked => {
                    if let Some(row) = self.api_keys.get_mut(&Id { id }) {
                        row.revoked = true;
                    }
                }
            },
        }
    }

    fn fold_department(&mut self, id: Uuid, event: DepartmentEvent) {
        use DepartmentEvent::*;
        let membership = |user_id: Uuid| DepartmentMemberKey {
            department_id: id,
            user_id,
        };
        match event {
            DepartmentRegistered {
                company_id, name, ..
            } => {
                self.departments.upsert_with(Id { id }, || DepartmentRow {
                    id,
                    company_id,
                    name,
                });
            }
            DepartmentRenamed { name } => {
                if let Some(row) = self.departments.get_mut(&Id { id }) {
                    row.name = name;
                }
            }
            DepartmentMemberAdded { user_id } => {
                self.department_flag(membership(user_id), |r| r.is_member = true)
            }
            DepartmentMemberRemoved { user_id } => {
                self.department_flag(membership(user_id), |r| r.is_member = false)
            }
            DepartmentManagerGranted { user_id } => {
                self.department_flag(membership(user_id), |r| r.is_manager = true)
            }
            DepartmentManagerRevoked { user_id } => {
                self.department_flag(membership(user_id), |r| r.is_manager = false)
            }
        }
    }

    fn department_flag(
        &mut self,
        key: DepartmentMemberKey,
        change: impl FnOnce(&mut DepartmentMemberRow),
    ) {
        let row = self
            .department_members
            .upsert_with(key.clone(), || DepartmentMemberRow {
                department_id: key.department_id,
                user_id: key.user_id,
                is_member: false,
                is_manager: false,
            });
        change(row);
        if !row.is_member && !row.is_manager {
            self.department_members.remove(&key);
        }
    }

    fn fold_chatroom(&mut self, id: Uuid, event: ChatroomEvent) {
        use ChatroomEvent::*;
        let manager = |user_id: Uuid| ChatroomMemberKey {
            chatroom_id: id,
            member_kind: "user".into(),
            member_id: user_id,
        };
        match event {
            ChatroomRegistered {
                company_id,
                name,
                department_id,
                archived,
                ..
            } => {
                let row = ChatroomRow {
                    id,
                    company_id,
                    department_id,
                    name,
                    archived,
                    jobs: None,
                };
                self.chatrooms.upsert_with(Id { id }, || row);
            }
            ChatroomRenamed { name } => self.room(id, |r| r.name = name),
            ChatroomDepartmentChanged { department_id } => {
                self.room(id, |r| r.department_id = department_id)
            }
            ChatroomArchived => self.room(id, |r| r.archived = true),
            ChatroomRestored => self.room(id, |r| r.archived = false),
            ChatroomMemberAdded { member } => {
                self.room_flag(member_key(id, &member), |r| r.is_member = true)
            }
            ChatroomMemberRemoved { member } => {
                self.room_flag(member_key(id, &member), |r| r.is_member = false)
            }
            ChatroomManagerGranted { user_id } => {
                self.room_flag(manager(user_id), |r| r.is_manager = true)
            }
            ChatroomManagerRevoked { user_id } => {
                self.room_flag(manager(user_id), |r| r.is_manager = false)
            }
            ChatroomFavouriteAdded { member } => {
                self.room_flag(member_key(id, &member), |r| r.is_favourite = true)
            }
            ChatroomFavouriteRemoved { member } => {
                self.room_flag(member_key(id, &member), |r| r.is_favourite = false)
            }
            ChatroomJobsSet { jobs } => self.room(id, |r| r.jobs = jobs),
        }
    }

    fn room(&mut self, id: Uuid, change: impl FnOnce(&mut ChatroomRow)) {
        if let Some(row) = self.chatrooms.get_mut(&Id { id }) {
            change(row);
        }
    }

    fn room_flag(&mut self, key: ChatroomMemberKey, change: impl FnOnce(&mut ChatroomMemberRow)) {
        let row = self
            .chatroom_members
            .upsert_with(key.clone(), || ChatroomMemberRow {
                chatroom_id: key.chatroom_id,
                member_kind: key.member_kind.clone(),
                member_id: key.member_id,
                is_member: false,
                is_manager: false,
                is_favourite: false,
            });
        change(row);
        if !row.is_member && !row.is_manager && !row.is_favourite {
            self.chatroom_members.remove(&key);
        }
    }

    async fn store(self, conn: &mut PgConnection) -> anyhow::Result<()> {
        COMPANIES.store(conn, self.companies).await?;
        DEPARTMENTS.store(conn, self.departments).await?;
        USERS.store(conn, self.users).await?;
        SOCIAL_CLIENTS.store(conn, self.social_clients).await?;
        CHATROOMS.store(conn, self.chatrooms).await?;
        DEPARTMENT_MEMBERS
            .store(conn, self.department_members)
            .await?;
        CHATROOM_MEMBERS.store(conn, self.chatroom_members).await?;
        API_KEYS.store(conn, self.api_keys).await
    }
}

/// The whole directory folded in memory by a rebuild from empty tables: one
/// working set over every batch, written once.
#[derive(Default)]
struct DirectoryFold(Workset);

#[async_trait]
impl MemoryFold for DirectoryFold {
    fn fold(&mut self, events: &[StoredEvent]) -> anyhow::Result<()> {
        for event in events {
            if let Some(change) = decode(event)? {
                self.0.fold(change);
            }
        }
        Ok(())
    }

    fn rows(&self) -> usize {
        self.0.rows()
    }

    async fn write(self: Box<Self>, conn: &mut PgConnection) -> anyhow::Result<()> {
        self.0.store(conn).await
    }
}

fn by_id<R>(rows: Vec<R>, id: impl Fn(&R) -> Uuid) -> RowSet<Id, R> {
    RowSet::loaded(rows.into_iter().map(move |row| (Id { id: id(&row) }, row)))
}

#[async_trait]
impl Projection for DirectoryProjection {
    fn name(&self) -> &'static str {
        "directory"
    }

    fn tables(&self) -> &'static [&'static str] {
        &[
            "companies",
            "departments",
            "users",
            "social_clients",
            "chatrooms",
            "department_members",
            "chatroom_members",
            "api_keys",
        ]
    }

    fn aggregate_types(&self) -> &'static [&'static str] {
        &[
            "company",
            "department",
            "user",
            "social_client",
            "chatroom",
            "api_key",
        ]
    }

    fn memory_fold(&self) -> Option<Box<dyn MemoryFold>> {
        Some(Box::<DirectoryFold>::default())
    }

    async fn apply(&self, conn: &mut PgConnection, events: &[StoredEvent]) -> anyhow::Result<()> {
        let mut changes = Vec::new();
        for event in events {
            if let Some(change) = decode(event)? {
                changes.push(change);
            }
        }
        if changes.is_empty() {
            return Ok(());
        }
        let mut workset = Workset::load(conn, &changes).await?;
        for change in changes {
            workset.fold(change);
        }
        workset.store(conn).await
    }
}
