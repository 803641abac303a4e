//! `sandboxctl directory apply FILE`: a declarative directory file applied
//! idempotently.
//!
//! Every id is derived from the file's references (`ref`), so re-applying the same
//! file reaches the same aggregates, and each aggregate emits only differences: a
//! second apply changes nothing. API key secrets are generated only when a key is
//! first issued; a re-apply prints `null` for keys that already existed.

use crate::auth::api_key::{generate_secret, hash_secret};
use crate::auth::jwt::JwtKeys;
use anyhow::{Context, bail};
use domain::AggregateExt;
use domain::directory::PrincipalRef;
use domain::directory::api_key::{ApiKey, ApiKeyCommand, ApiKeyEvent, KeyAccess};
use domain::directory::chatroom::{Chatroom, ChatroomCommand};
use domain::directory::company::{Company, CompanyCommand};
use domain::directory::department::{Department, DepartmentCommand};
use domain::directory::social_client::{SocialClient, SocialClientCommand};
use domain::directory::user::{User, UserCommand};
use domain::ids::derive;
use domain::principal::{EventMetadata, PrincipalType};
use projections::pump::Ticket;
use projections::{CommandBus, store::EventKey};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use uuid::Uuid;

mod file;

pub use file::*;

/// The output: ids and credentials per reference.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Applied {
    /// Per company reference.
    pub companies: BTreeMap<String, AppliedCompany>,
}

/// One company's ids and credentials.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct AppliedCompany {
    /// Company id.
    pub id: Uuid,
    /// Department ids.
    pub departments: BTreeMap<String, Uuid>,
    /// Chatroom ids.
    pub chatrooms: BTreeMap<String, Uuid>,
    /// User ids and fresh tokens.
    pub users: BTreeMap<String, AppliedUser>,
    /// Key ids and secrets (secrets only when first issued).
    pub api_keys: BTreeMap<String, AppliedKey>,
    /// Client ids.
    pub social_clients: BTreeMap<String, AppliedId>,
}

/// A user's id and a JWT.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppliedUser {
    /// User id.
    pub id: Uuid,
    /// A fresh JWT.
    pub token: String,
}

/// A key's id and, when it was created by this apply, its secret.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppliedKey {
    /// Key id.
    pub id: Uuid,
    /// The secret, shown once.
    pub key: Option<String>,
}

/// An id.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct AppliedId {
    /// The id.
    pub id: Uuid,
}

/// The id of a company reference.
pub fn company_id(reference: &str) -> Uuid {
    derive("company", &[reference])
}

/// The id of an entry of a company (`kind` is `department`, `chatroom`, `user`,
/// `api_key` or `social_client`).
pub fn entry_id(company: Uuid, kind: &str, reference: &str) -> Uuid {
    derive(kind, &[&company.to_string(), reference])
}

/// The key and pump ticket of the latest append, which the final wait needs.
type Appended = (EventKey, Ticket);

/// What applying needs.
pub struct Applier<'a> {
    /// The command bus.
    pub bus: &'a CommandBus,
    /// Keys for the printed tokens.
    pub jwt: &'a JwtKeys,
    /// Lifetime of printed tokens.
    pub token_ttl: chrono::Duration,
    /// Event metadata of the operator.
    pub metadata: EventMetadata,
}

impl Applier<'_> {
    /// Applies the file and waits until the read models show it.
    pub async fn apply(&self, file: &DirectoryFile) -> anyhow::Result<Applied> {
        let mut applied = Applied::default();
        let mut last = None;
        for company in &file.companies {
            let (out, key) = self.apply_company(company).await?;
            last = key.or(last);
            applied.companies.insert(company.reference.clone(), out);
        }
        if let Some((key, ticket)) = last {
            self.bus.pump().wait_for(&key, Some(ticket)).await?;
        }
        Ok(applied)
    }

    async fn run<A>(
        &self,
        id: Uuid,
        command: A::Command,
        last: &mut Option<Appended>,
    ) -> anyhow::Result<Vec<A::Event>>
    where
        A: AggregateExt<Services = ()>,
        A::Command: Clone,
        A::Error: Send + Sync + 'static,
    {
        let committed = self
            .bus
            .append::<A>(&id.to_string(), command, &self.metadata)
            .await
            .with_context(|| format!("{} {id}", A::TYPE))?;
        if let (Some(key), Some(ticket)) = (committed.last, committed.ticket) {
            *last = Some((key, ticket));
        }
        Ok(committed.events)
    }

    async fn apply_company(
        &self,
        spec: &CompanySpec,
    ) -> anyhow::Result<(AppliedCompany, Option<Appended>)> {
        let company = company_id(&spec.reference);
        let refs = Refs::new(company, spec)?;
        let mut last = None;
        let mut out = AppliedCompany {
            id: company,
            ..Default::default()
        };
        self.run::<Company>(
            company,
            CompanyCommand::Define {
                company_id: company,
                name: spec.name.clone(),
            },
            &mut last,
        )
        .await?;
        for d in &spec.departments {
            let id = refs.department(&d.reference)?;
            let command = DepartmentCommand::Define {
                department_id: id,
                company_id: company,
                name: d.name.clone(),
            };
            self.run::<Department>(id, command, &mut last).await?;
            out.departments.insert(d.reference.clone(), id);
        }
        for u in &spec.users {
            let id = refs.user(&u.reference)?;
            let command = UserCommand::Define {
                user_id: id,
                company_id: company,
                username: u.username.clone(),
                role: u.role,
            };
            self.run::<User>(id, command, &mut last).await?;
            let token = self.jwt.mint(id, company, self.token_ttl)?;
            out.users
                .insert(u.reference.clone(), AppliedUser { id, token });
        }
        for c in &spec.social_clients {
            let id = refs.client(&c.reference)?;
            let command = SocialClientCommand::Define {
                client_id: id,
                company_id: company,
                platform: c.platform.clone(),
                platform_user_id: c.platform_user_id.clone(),
                display_name: c
                    .display_name
                    .clone()
                    .unwrap_or_else(|| c.platform_user_id.clone()),
            };
            self.run::<SocialClient>(id, command, &mut last).await?;
            out.social_clients
                .insert(c.reference.clone(), AppliedId { id });
        }
        for d in &spec.departments {
            let id = refs.department(&d.reference)?;
            let members = refs.users_where(spec, |u| u.departments.contains(&d.reference))?;
            let managers =
                refs.users_where(spec, |u| u.manages_departments.contains(&d.reference))?;
            self.run::<Department>(
                id,
                DepartmentCommand::SetMembership { members, managers },
                &mut last,
            )
            .await?;
        }
        for r in &spec.chatrooms {
            let id = refs.chatroom(&r.reference)?;
            let department_id = r
                .department
                .as_deref()
                .map(|d| refs.department(d))
                .transpose()?;
            let command = ChatroomCommand::Define {
                chatroom_id: id,
                company_id: company,
                name: r.name.clone(),
                department_id,
                archived: r.archived,
            };
            self.run::<Chatroom>(id, command, &mut last).await?;
            let room = &r.reference;
            let members = refs.room_principals(spec, |rooms, _| rooms.contains(room))?;
            let favourites = refs.room_principals(spec, |rooms, favourites| {
                rooms.contains(room) && favourites.contains(room)
            })?;
            let managers = refs.users_where(spec, |u| u.manages_chatrooms.contains(room))?;
            let command = ChatroomCommand::SetMembership {
                members,
                managers,
                favourites,
            };
            self.run::<Chatroom>(id, command, &mut last).await?;
            out.chatrooms.insert(r.reference.clone(), id);
        }
        for k in &spec.api_keys {
            let id = entry_id(company, "api_key", &k.reference);
            let owner = match (&k.user, &k.social_client) {
                (Some(user), None) => PrincipalRef {
                    kind: PrincipalType::User,
                    id: refs.user(user)?,
                },
                (None, Some(client)) => PrincipalRef {
                    kind: PrincipalType::SocialMediaClient,
                    id: refs.client(client)?,
                },
                _ => bail!(
                    "API key `{}` needs exactly one of `user` or `social_client`",
                    k.reference
                ),
            };
            let chatroom_ids = k
                .chatrooms
                .iter()
                .map(|c| refs.chatroom(c))
                .collect::<anyhow::Result<_>>()?;
            let secret = generate_secret();
            let command = ApiKeyCommand::Issue {
                key_id: id,
                company_id: company,
                owner,
                secret_sha256: hash_secret(&secret),
                access: KeyAccess {
                    scope: Some(k.scope),
                    chatroom_ids,
                    domains: k.domains.clone(),
                },
            };
            let events = self.run::<ApiKey>(id, command, &mut last).await?;
            let issued = events
                .iter()
                .any(|e| matches!(e, ApiKeyEvent::ApiKeyIssued { .. }));
            out.api_keys.insert(
                k.reference.clone(),
                AppliedKey {
                    id,
                    key: issued.then_some(secret),
                },
            );
        }
        Ok((out, last))
    }
}

/// Resolves references of one company, refusing unknown ones.
struct Refs {
    company: Uuid,
    departments: BTreeSet<String>,
    chatrooms: BTreeSet<String>,
    users: BTreeSet<String>,
    clients: BTreeSet<String>,
}

impl Refs {
    fn new(company: Uuid, spec: &CompanySpec) -> anyhow::Result<Self> {
        fn unique<'a>(
            kind: &str,
            refs: impl Iterator<Item = &'a String>,
        ) -> anyhow::Result<BTreeSet<String>> {
            let mut set = BTreeSet::new();
            for r in refs {
                if !set.insert(r.clone()) {
                    bail!("{kind} reference `{r}` is used twice");
                }
            }
            Ok(set)
        }
        Ok(Self {
            company,
            departments: unique("department", spec.departments.iter().map(|d| &d.reference))?,
            chatrooms: unique("chatroom", spec.chatrooms.iter().map(|c| &c.reference))?,
            users: unique("user", spec.users.iter().map(|u| &u.reference))?,
            clients: unique(
                "social client",
                spec.social_clients.iter().map(|c| &c.reference),
            )?,
        })
    }

    fn resolve(&self, set: &BTreeSet<String>, kind: &str, reference: &str) -> anyhow::Result<Uuid> {
        if !set.contains(reference) {
            bail!("unknown {kind} reference `{reference}`");
        }
        Ok(entry_id(self.company, kind, reference))
    }

    fn department(&self, r: &str) -> anyhow::Result<Uuid> {
        self.resolve(&self.departments, "department", r)
    }
    fn chatroom(&self, r: &str) -> anyhow::Result<Uuid> {
        self.resolve(&self.chatrooms, "chatroom", r)
    }
    fn user(&self, r: &str) -> anyhow::Result<Uuid> {
        self.resolve(&self.users, "user", r)
    }
    fn client(&self, r: &str) -> anyhow::Result<Uuid> {
        self.resolve(&self.clients, "social_client", r)
    }

    /// Users matching a predicate, after checking all their references exist.
    fn users_where(
        &self,
        spec: &CompanySpec,
        keep: impl Fn(&UserSpec) -> bool,
    ) -> anyhow::Result<BTreeSet<Uuid>> {
        let mut ids = BTreeSet::new();
        for user in &spec.users {
            for d in user.departments.iter().chain(&user.manages_departments) {
                self.department(d)
                    .with_context(|| format!("user `{}`", user.reference))?;
            }
            let rooms = user.chatrooms.iter().chain(&user.manages_chatrooms);
            for c in rooms.chain(&user.favourite_chatrooms) {
                self.chatroom(c)
                    .with_context(|| format!("user `{}`", user.reference))?;
            }
            if keep(user) {
                ids.insert(self.user(&user.reference)?);
            }
        }
        Ok(ids)
    }

    /// The users and social media clients whose room lists (rooms they are in,
    /// rooms they keep as favourites) match a predicate.
    fn room_principals(
        &self,
        spec: &CompanySpec,
        keep: impl Fn(&[String], &[String]) -> bool,
    ) -> anyhow::Result<BTreeSet<PrincipalRef>> {
        let users = self.users_where(spec, |u| keep(&u.chatrooms, &u.favourite_chatrooms))?;
        let mut principals: BTreeSet<PrincipalRef> = users
            .into_iter()
            .map(|id| PrincipalRef {
                kind: PrincipalType::User,
                id,
            })
            .collect();
        for c in &spec.social_clients {
            for room in c.chatrooms.iter().chain(&c.favourite_chatrooms) {
                self.chatroom(room)
                    .with_context(|| format!("social client `{}`", c.reference))?;
            }
            if keep(&c.chatrooms, &c.favourite_chatrooms) {
                principals.insert(PrincipalRef {
                    kind: PrincipalType::SocialMediaClient,
                    id: self.client(&c.reference)?,
                });
            }
        }
        Ok(principals)
    }
}
