//! (d): projector catch-up from a cold checkpoint over a synthetic directory and
//! settings log.

use cqrs_es::persist::SerializedEvent;
use cqrs_es::{Aggregate, DomainEvent};
use domain::directory::PrincipalRef;
use domain::directory::chatroom::{Chatroom, ChatroomEvent};
use domain::directory::department::{Department, DepartmentEvent};
use domain::directory::user::{User, UserEvent};
use domain::principal::PrincipalType;
use domain::settings::{CompanySettings, PolicyValues, SettingsEvent};
use projections::pump::PumpConfig;
use projections::store::LogRepository;
use projections::{Pump, read_models};
use serde_json::json;
use sqlx::PgPool;
use std::collections::HashMap;
use std::time::Instant;
use uuid::Uuid;

/// The outcome of a catch-up run.
pub struct CatchUp {
    /// Events applied by every projection.
    pub events: usize,
    /// Wall time.
    pub seconds: f64,
}

/// Builds the synthetic log row by row, tracking each aggregate's sequence.
pub struct LogBuilder {
    sequences: HashMap<String, usize>,
    pending: Vec<SerializedEvent>,
    repo: LogRepository,
}

impl LogBuilder {
    /// An empty builder appending to the pool's log.
    pub fn new(pool: &PgPool) -> Self {
        Self {
            sequences: HashMap::new(),
            pending: Vec::new(),
            repo: LogRepository::new(pool.clone()),
        }
    }

    /// Adds an event of aggregate `A` (appended in batches).
    pub async fn push<A: Aggregate>(&mut self, id: Uuid, event: A::Event) -> anyhow::Result<()> {
        let id = id.to_string();
        let sequence = self
            .sequences
            .entry(format!("{}/{id}", A::TYPE))
            .or_default();
        *sequence += 1;
        self.pending.push(SerializedEvent::new(
            id,
            *sequence,
            A::TYPE.to_string(),
            event.event_type(),
            event.event_version(),
            serde_json::to_value(&event)?,
            json!({"principal_type": "operator", "principal_id": "bench", "request_id": "bench", "time": "2026-01-01T00:00:00Z"}),
        ));
        if self.pending.len() >= 2_000 {
            self.flush().await?;
        }
        Ok(())
    }

    /// Appends what is pending.
    pub async fn flush(&mut self) -> anyhow::Result<()> {
        if !self.pending.is_empty() {
            self.repo.append(&std::mem::take(&mut self.pending)).await?;
        }
        Ok(())
    }
}

/// The shape of the synthetic log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mix {
    /// 60% of events register a new user (a new row each), the rest add members,
    /// change roles and update settings: the most expensive shape, about one row
    /// write per event.
    Creations,
    /// Each user's lifecycle in a row: registered, joins a department and a room,
    /// role change, rename, manager grants, a settings update: several events per
    /// row, as aggregates with lifecycles (runs, builds, versions) produce.
    Lifecycles,
}

/// Writes `total` directory and settings events of the given mix, seals them, then
/// times every projection from position 0.
pub async fn cold_catch_up(pool: &PgPool, total: usize, mix: Mix) -> anyhow::Result<CatchUp> {
    let mut log = LogBuilder::new(pool);
    let companies: Vec<Uuid> = (0..500).map(|_| Uuid::new_v4()).collect();
    let departments: Vec<Uuid> = (0..200).map(|_| Uuid::new_v4()).collect();
    let rooms: Vec<Uuid> = (0..200).map(|_| Uuid::new_v4()).collect();
    let fixed = departments.len() + rooms.len();
    anyhow::ensure!(
        total > fixed,
        "a catch-up log needs more than its {fixed} departments and rooms: ask for more events than {total}"
    );
    for (i, id) in departments.iter().enumerate() {
        let event = DepartmentEvent::DepartmentRegistered {
            department_id: *id,
            company_id: companies[i],
            name: format!("d{i}"),
        };
        log.push::<Department>(*id, event).await?;
    }
    for (i, id) in rooms.iter().enumerate() {
        let event = ChatroomEvent::ChatroomRegistered {
            chatroom_id: *id,
            company_id: companies[i],
            name: format!("r{i}"),
            department_id: Some(departments[i]),
            archived: false,
        };
        log.push::<Chatroom>(*id, event).await?;
    }
    let mut written = fixed;
    let world = World {
        companies: &companies,
        departments: &departments,
        rooms: &rooms,
    };
    match mix {
        Mix::Creations => written += creations(&mut log, &world, total - written).await?,
        Mix::Lifecycles => written += lifecycles(&mut log, &world, total - written).await?,
    }
    log.flush().await?;
    // Seal (and project) everything, then forget the read models and time a
    // projection of the whole log from position 0. One pump does both: it keeps
    // the leadership of the database.
    let pump = Pump::new(pool.clone(), read_models::all(), PumpConfig::default());
    pump.register().await?;
    loop {
        pump.drain().await;
        let sealed: i64 = sqlx::query_scalar("SELECT count(position) FROM events")
            .fetch_one(pool)
            .await?;
        if sealed as usize == written {
            break;
        }
    }
    let mut tables = Vec::new();
    for projection in pump.projections() {
        tables.extend(projection.tables().iter().copied());
    }
    sqlx::query(&format!("TRUNCATE {}", tables.join(", ")))
        .execute(pool)
        .await?;
    sqlx::query("UPDATE projection_checkpoints SET position = 0")
        .execute(pool)
        .await?;
    let started = Instant::now();
    pump.drain().await;
    let seconds = started.elapsed().as_secs_f64();
    let projected: i64 = sqlx::query_scalar("SELECT min(position) FROM projection_checkpoints")
        .fetch_one(pool)
        .await?;
    let head: i64 = sqlx::query_scalar("SELECT max(position) FROM events")
        .fetch_one(pool)
        .await?;
    anyhow::ensure!(
        projected == head && head as usize == written,
        "projected {projected} of {head} ({written} written)"
    );
    Ok(CatchUp {
        events: head as usize,
        seconds,
    })
}

/// The fixed companies, departments and rooms users are spread over.
struct World<'a> {
    companies: &'a [Uuid],
    departments: &'a [Uuid],
    rooms: &'a [Uuid],
}

fn member(id: Uuid) -> PrincipalRef {
    PrincipalRef {
        kind: PrincipalType::User,
        id,
    }
}

fn policy(version: usize) -> SettingsEvent {
    let values = PolicyValues::defaults(&["onprem".into()]);
    SettingsEvent::PolicyUpdated {
        values,
        policy_version: version as i64,
    }
}

/// [`Mix::Creations`]; returns the events written.
async fn creations(log: &mut LogBuilder, world: &World<'_>, count: usize) -> anyhow::Result<usize> {
    let mut users = Vec::new();
    for i in 0..count {
        let company = world.companies[i % world.companies.len()];
        let department = world.departments[i % world.departments.len()];
        let room = world.rooms[i % world.rooms.len()];
        match i % 10 {
            0..=5 => {
                let user = Uuid::new_v4();
                users.push(user);
                let event = UserEvent::UserRegistered {
                    user_id: user,
                    company_id: company,
                    username: format!("u{i}"),
                    role: 1,
                };
                log.push::<User>(user, event).await?;
            }
            6 => {
                let event = DepartmentEvent::DepartmentMemberAdded {
                    user_id: users[i % users.len()],
                };
                log.push::<Department>(department, event).await?;
            }
            7 => {
                let event = ChatroomEvent::ChatroomMemberAdded {
                    member: member(users[i % users.len()]),
                };
                log.push::<Chatroom>(room, event).await?;
            }
            8 => log.push::<CompanySettings>(company, policy(i)).await?,
            _ => {
                let event = UserEvent::UserRoleChanged {
                    role: (i % 5) as i32,
                };
                log.push::<User>(users[i % users.len()], event).await?;
            }
        }
    }
    log.flush().await?;
    Ok(count)
}

/// [`Mix::Lifecycles`]; returns the events written.
async fn lifecycles(
    log: &mut LogBuilder,
    world: &World<'_>,
    count: usize,
) -> anyhow::Result<usize> {
    let mut written = 0;
    let mut i = 0;
    while written + 8 <= count {
        let company = world.companies[i % world.companies.len()];
        let department = world.departments[i % world.departments.len()];
        let room = world.rooms[i % world.rooms.len()];
        let user = Uuid::new_v4();
        let registered = UserEvent::UserRegistered {
            user_id: user,
            company_id: company,
            username: format!("u{i}"),
            role: 1,
        };
        log.push::<User>(user, registered).await?;
        log.push::<Department>(
            department,
            DepartmentEvent::DepartmentMemberAdded { user_id: user },
        )
        .await?;
        log.push::<Chatroom>(
            room,
            ChatroomEvent::ChatroomMemberAdded {
                member: member(user),
            },
        )
        .await?;
        log.push::<User>(user, UserEvent::UserRoleChanged { role: 2 })
            .await?;
        log.push::<Chatroom>(
            room,
            ChatroomEvent::ChatroomManagerGranted { user_id: user },
        )
        .await?;
        log.push::<User>(
            user,
            UserEvent::UserRenamed {
                username: format!("user-{i}"),
            },
        )
        .await?;
        log.push::<CompanySettings>(company, policy(i)).await?;
        log.push::<Department>(
            department,
            DepartmentEvent::DepartmentManagerGranted { user_id: user },
        )
        .await?;
        written += 8;
        i += 1;
    }
    log.flush().await?;
    Ok(written)
}
