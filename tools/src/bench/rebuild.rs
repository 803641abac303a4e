//! `bench rebuild`: rebuild speed of every projection on a synthetic log.
//!
//! The log holds `events` directory and settings events over `aggregates` aggregates
//! (1% companies with their settings, 4% departments, 4% chatrooms, the rest users),
//! then memberships, manager grants, renames, role changes and policy updates spread
//! over them. It is sealed (with the hash chain) by a pump, then each projection is
//! rebuilt from position 0 through the same path as `projections rebuild` (shadow
//! tables, batches, swap) and timed.

use super::catchup::LogBuilder;
use domain::directory::PrincipalRef;
use domain::directory::chatroom::{Chatroom, ChatroomEvent};
use domain::directory::company::{Company, CompanyEvent};
use domain::directory::department::{Department, DepartmentEvent};
use domain::directory::user::{User, UserEvent};
use domain::principal::PrincipalType;
use domain::settings::{CompanySettings, PolicyValues, SettingsEvent};
use projections::pump::PumpConfig;
use projections::rebuild::{Outcome, Rebuild, Target};
use projections::{Pump, read_models};
use sqlx::PgPool;
use std::time::Instant;
use tokio_util::sync::CancellationToken;
use uuid::Uuid;

/// The figures of one projection's rebuild.
pub struct RebuildFigures {
    /// Projection name.
    pub name: &'static str,
    /// Events of the log it went through.
    pub log_events: i64,
    /// Events of its aggregate types (those it applied).
    pub applied: i64,
    /// Wall time, swap included.
    pub seconds: f64,
}

/// The synthetic population.
struct Population {
    companies: Vec<Uuid>,
    departments: Vec<Uuid>,
    rooms: Vec<Uuid>,
    users: Vec<Uuid>,
}

impl Population {
    fn new(aggregates: usize) -> Self {
        let ids = |n: usize| (0..n.max(1)).map(|_| Uuid::new_v4()).collect::<Vec<_>>();
        // Companies count twice: the company and its settings.
        let companies = ids(aggregates / 200);
        let departments = ids(aggregates / 25);
        let rooms = ids(aggregates / 25);
        let others = 2 * companies.len() + departments.len() + rooms.len();
        let users = ids(aggregates.saturating_sub(others));
        Self {
            companies,
            departments,
            rooms,
            users,
        }
    }

    fn aggregates(&self) -> usize {
        2 * self.companies.len() + self.departments.len() + self.rooms.len() + self.users.len()
    }
}

fn member(id: Uuid) -> PrincipalRef {
    PrincipalRef {
        kind: PrincipalType::User,
        id,
    }
}

/// Writes the synthetic log; returns the number of events and aggregates.
async fn write_log(
    pool: &PgPool,
    events: usize,
    aggregates: usize,
) -> anyhow::Result<(usize, usize)> {
    let world = Population::new(aggregates);
    let mut log = LogBuilder::new(pool);
    let values = PolicyValues::defaults(&["onprem".into()]);
    let mut written = 0;
    for (i, id) in world.companies.iter().enumerate() {
        let name = format!("c{i}");
        log.push::<Company>(
            *id,
            CompanyEvent::CompanyRegistered {
                company_id: *id,
                name,
            },
        )
        .await?;
        let recorded = SettingsEvent::DefaultPolicyRecorded {
            company_id: *id,
            values: values.clone(),
            policy_version: 1,
        };
        log.push::<CompanySettings>(*id, recorded).await?;
        written += 2;
    }
    let company = |i: usize| world.companies[i % world.companies.len()];
    for (i, id) in world.departments.iter().enumerate() {
        let event = DepartmentEvent::DepartmentRegistered {
            department_id: *id,
            company_id: company(i),
            name: format!("d{i}"),
        };
        log.push::<Department>(*id, event).await?;
        written += 1;
    }
    for (i, id) in world.rooms.iter().enumerate() {
        let event = ChatroomEvent::ChatroomRegistered {
            chatroom_id: *id,
            company_id: company(i),
            name: format!("r{i}"),
            department_id: Some(world.departments[i % world.departments.len()]),
            archived: false,
        };
        log.push::<Chatroom>(*id, event).await?;
        written += 1;
    }
    for (i, id) in world.users.iter().enumerate() {
        let event = UserEvent::UserRegistered {
            user_id: *id,
            company_id: company(i),
            username: format!("u{i}"),
            role: 1,
        };
        log.push::<User>(*id, event).await?;
        written += 1;
    }
    let mut i = 0;
    while written < events {
        let user = world.users[(i * 7919) % world.users.len()];
        let department = world.departments[i % world.departments.len()];
        let room = world.rooms[(i * 31) % world.rooms.len()];
        match i % 10 {
            0 => {
                log.push::<User>(
                    user,
                    UserEvent::UserRoleChanged {
                        role: (i % 5) as i32,
                    },
                )
                .await?
            }
            1 => {
                let username = format!("user-{i}");
                log.push::<User>(user, UserEvent::UserRenamed { username })
                    .await?
            }
            2 | 3 => {
                let event = DepartmentEvent::DepartmentMemberAdded { user_id: user };
                log.push::<Department>(department, event).await?
            }
            4 => {
                let event = DepartmentEvent::DepartmentManagerGranted { user_id: user };
                log.push::<Department>(department, event).await?
            }
            5 | 6 => {
                let event = ChatroomEvent::ChatroomMemberAdded {
                    member: member(user),
                };
                log.push::<Chatroom>(room, event).await?
            }
            7 => {
                let event = ChatroomEvent::ChatroomMemberRemoved {
                    member: member(user),
                };
                log.push::<Chatroom>(room, event).await?
            }
            8 => {
                let event = SettingsEvent::PolicyUpdated {
                    values: PolicyValues {
                        run_content_retention_days: (i % 365) as i32 + 1,
                        ..values.clone()
                    },
                    policy_version: i as i64,
                };
                log.push::<CompanySettings>(company(i), event).await?
            }
            _ => {
                let name = format!("room-{i}");
                log.push::<Chatroom>(room, ChatroomEvent::ChatroomRenamed { name })
                    .await?
            }
        }
        written += 1;
        i += 1;
    }
    log.flush().await?;
    Ok((written, world.aggregates()))
}

/// Writes and seals the log, then rebuilds every projection and times it.
pub async fn rebuild_speed(
    pool: &PgPool,
    events: usize,
    aggregates: usize,
    batch: i64,
) -> anyhow::Result<(usize, Vec<RebuildFigures>)> {
    let started = Instant::now();
    let (written, aggregates) = write_log(pool, events, aggregates).await?;
    println!(
        "log written: {written} events over {aggregates} aggregates in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let started = Instant::now();
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
    println!(
        "log sealed and projected live in {:.1} s",
        started.elapsed().as_secs_f64()
    );
    let mut figures = Vec::new();
    for projection in read_models::all() {
        let applied: i64 =
            sqlx::query_scalar("SELECT count(*) FROM events WHERE aggregate_type = ANY($1)")
                .bind(projection.aggregate_types())
                .fetch_one(pool)
                .await?;
        let name = projection.name();
        let started = Instant::now();
        let job = Rebuild::start(pool, projection, Target::Swap)
            .await?
            .with_batch(batch);
        let outcome = job.run(&CancellationToken::new(), |_, _| {}).await?;
        let seconds = started.elapsed().as_secs_f64();
        let Outcome::Swapped(position) = outcome else {
            anyhow::bail!("the rebuild of {name} did not swap: {outcome:?}");
        };
        figures.push(RebuildFigures {
            name,
            log_events: position,
            applied,
            seconds,
        });
    }
    Ok((written, figures))
}
