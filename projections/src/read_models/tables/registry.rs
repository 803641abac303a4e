//! Table events: the registry rows (`custom_tables`, `custom_table_columns`,
//! `custom_table_views`, `custom_table_migrations`) and the DDL and data migrations
//! of the physical tables. Times come from the events' metadata, so a replay writes
//! the same rows.

use super::automation;
use super::filter_indexes;
use super::physical::{self, batch, ident, table_name};
use super::rewrite::{self, Rewrite};
use chrono::{DateTime, Utc};
use domain::tables::column::{ColumnDef, ColumnType};
use domain::tables::table::{MigrationInfo, TableEvent};
use sqlx::PgConnection;
use sqlx::types::Json;
use uuid::Uuid;

/// A background migration's starting event and its rewrite, if it has one.
#[derive(sqlx::FromRow)]
struct Planned {
    plan: Option<Json<TableEvent>>,
    rewrite: Option<Json<Rewrite>>,
}

/// Applies one table event.
pub async fn apply(
    conn: &mut PgConnection,
    event: TableEvent,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    use TableEvent as E;
    match event.clone() {
        E::TableCreated {
            table_id,
            company_id,
            scope,
            name,
            description,
            created_by,
        } => {
            sqlx::query(
                "INSERT INTO custom_tables (id, company_id, scope_kind, scope_id, name, description, created_by,
                                            created_at, updated_at, record_count)
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $8, 0)",
            )
            .bind(table_id)
            .bind(company_id)
            .bind(scope.kind.as_str())
            .bind(scope.id)
            .bind(name)
            .bind(description)
            .bind(created_by)
            .bind(at)
            .execute(&mut *conn)
            .await?;
            physical::create_table(conn, table_id).await
        }
        E::TableUpdated {
            table_id,
            name,
            description,
        } => {
            sqlx::query("UPDATE custom_tables SET name = $2, description = $3, updated_at = $4 WHERE id = $1")
                .bind(table_id)
                .bind(name)
                .bind(description)
                .bind(at)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
        E::TableDeleted { table_id } => {
            batch(
                conn,
                &format!(
                    "DELETE FROM custom_table_columns WHERE table_id = '{table_id}';
                 DELETE FROM custom_table_views WHERE table_id = '{table_id}';
                 DELETE FROM custom_table_migrations WHERE table_id = '{table_id}';
                 DELETE FROM custom_table_grants WHERE table_id = '{table_id}';
                 DELETE FROM custom_table_triggers WHERE table_id = '{table_id}';
                 DELETE FROM custom_table_rules WHERE table_id = '{table_id}';
                 DELETE FROM custom_table_client_unlocks WHERE table_id = '{table_id}';
                 DELETE FROM custom_tables WHERE id = '{table_id}';"
                ),
            )
            .await?;
            physical::drop_table(conn, table_id).await
        }
        E::ColumnAdded {
            ref table_id,
            ref column,
            ref fill,
            ref migration,
        } => {
            sqlx::query(
                "INSERT INTO custom_table_columns (table_id, key, position, name, type, definition, created_at, updated_at)
                 SELECT $1, $2, coalesce(max(position), 0) + 1, $3, $4, $5, $6, $6
                   FROM custom_table_columns WHERE table_id = $1",
            )
            .bind(table_id)
            .bind(&column.key)
            .bind(&column.name)
            .bind(column.column_type.as_str())
            .bind(Json(column))
            .bind(at)
            .execute(&mut *conn)
            .await?;
            physical::add_column(conn, *table_id, column).await?;
            touch(conn, *table_id, at).await?;
            match (fill, migration) {
                (Some(_), Some(m)) => {
                    start_migration(conn, &event, m, &column.key, "default_fill", at).await
                }
                _ => Ok(()),
            }
        }
        E::ColumnUpdated { table_id, column } => update_column(conn, table_id, &column, at).await,
        E::ColumnTypeChanged {
            ref table_id,
            ref migration,
            ref column,
            ..
        } => {
            start_migration(conn, &event, migration, &column.key, "type_change", at).await?;
            filter_indexes::sync(conn, *table_id).await
        }
        E::ColumnOptionsRenamed {
            ref migration,
            ref key,
            ..
        } => start_migration(conn, &event, migration, key, "option_rename", at).await,
        E::ColumnDeleted { table_id, key } => {
            sqlx::query("DELETE FROM custom_table_columns WHERE table_id = $1 AND key = $2")
                .bind(table_id)
                .bind(&key)
                .execute(&mut *conn)
                .await?;
            touch(conn, table_id, at).await?;
            physical::drop_column(conn, table_id, &key).await?;
            // Dropping the column dropped every grant index holding it.
            filter_indexes::sync(conn, table_id).await
        }
        E::MigrationCompleted {
            table_id,
            migration_id,
        } => {
            let planned: Option<Planned> = sqlx::query_as(
                "SELECT plan, rewrite FROM custom_table_migrations WHERE id = $1 AND completed_at IS NULL",
            )
            .bind(migration_id)
            .fetch_optional(&mut *conn)
            .await?;
            if let Some(Planned {
                plan: Some(Json(plan)),
                rewrite,
            }) = planned
            {
                let rows = match rewrite {
                    Some(Json(rewrite)) => swap(conn, &plan, &rewrite, at).await?,
                    // Started before rewrites existed: rewrite in place.
                    None => run_data_change(conn, &plan, at).await?,
                };
                finish_migration(conn, migration_id, rows, at).await?;
            }
            sqlx::query(
                "UPDATE custom_tables SET migration_id = NULL WHERE id = $1 AND migration_id = $2",
            )
            .bind(table_id)
            .bind(migration_id)
            .execute(&mut *conn)
            .await?;
            // A type change applied now may have made an indexed column unbounded.
            filter_indexes::sync(conn, table_id).await
        }
        E::ViewCreated { table_id, view } | E::ViewUpdated { table_id, view } => {
            sqlx::query(
                "INSERT INTO custom_table_views (table_id, id, name, definition, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $5)
                 ON CONFLICT (table_id, id) DO UPDATE SET name = EXCLUDED.name, definition = EXCLUDED.definition,
                                                          updated_at = EXCLUDED.updated_at",
            )
            .bind(table_id)
            .bind(view.id)
            .bind(&view.name)
            .bind(Json(&view))
            .bind(at)
            .execute(&mut *conn)
            .await?;
            filter_indexes::sync(conn, table_id).await
        }
        E::ViewDeleted { table_id, view_id } => {
            sqlx::query("DELETE FROM custom_table_views WHERE table_id = $1 AND id = $2")
                .bind(table_id)
                .bind(view_id)
                .execute(&mut *conn)
                .await?;
            filter_indexes::sync(conn, table_id).await
        }
        E::GrantSet {
            table_id,
            subject,
            grant,
        } => {
            sqlx::query(
                "INSERT INTO custom_table_grants (table_id, subject_kind, subject_id, grant_body, created_at, updated_at)
                 VALUES ($1, $2, $3, $4, $5, $5)
                 ON CONFLICT (table_id, subject_kind, subject_id)
                 DO UPDATE SET grant_body = excluded.grant_body, updated_at = excluded.updated_at",
            )
            .bind(table_id)
            .bind(subject.kind())
            .bind(subject.id())
            .bind(Json(grant))
            .bind(at)
            .execute(&mut *conn)
            .await?;
            filter_indexes::sync(conn, table_id).await
        }
        E::GrantRevoked { table_id, subject } => {
            sqlx::query(
                "DELETE FROM custom_table_grants WHERE table_id = $1 AND subject_kind = $2 AND subject_id = $3",
            )
            .bind(table_id)
            .bind(subject.kind())
            .bind(subject.id())
            .execute(&mut *conn)
            .await?;
            filter_indexes::sync(conn, table_id).await
        }
        E::ClientAccessSet { table_id, enabled } => {
            sqlx::query("UPDATE custom_tables SET client_access = $2 WHERE id = $1")
                .bind(table_id)
                .bind(enabled)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
        E::ClientPassphraseSet {
            table_id,
            passphrase_hash,
        } => {
            sqlx::query("UPDATE custom_tables SET client_passphrase = $2 WHERE id = $1;")
                .bind(table_id)
                .bind(passphrase_hash.is_some())
                .execute(&mut *conn)
                .await?;
            sqlx::query("DELETE FROM custom_table_client_unlocks WHERE table_id = $1")
                .bind(table_id)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
        E::ClientUnlocked {
            table_id,
            client_id,
        } => {
            sqlx::query(
                "INSERT INTO custom_table_client_unlocks (table_id, client_id, unlocked_at)
                 VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
            )
            .bind(table_id)
            .bind(client_id)
            .bind(at)
            .execute(&mut *conn)
            .await?;
            Ok(())
        }
        E::ChannelScopeSet { table_id, column } => {
            sqlx::query("UPDATE custom_tables SET channel_scope_column = $2 WHERE id = $1")
                .bind(table_id)
                .bind(column)
                .execute(&mut *conn)
                .await?;
            Ok(())
        }
        E::SettingsSet {
            table_id,
            agent_writes_via_commands_only,
        } => {
            sqlx::query(
                "UPDATE custom_tables SET agent_writes_via_commands_only = $2 WHERE id = $1",
            )
            .bind(table_id)
            .bind(agent_writes_via_commands_only)
            .execute(&mut *conn)
            .await?;
            Ok(())
        }
        E::TriggersSet {
            table_id,
            triggers,
            saved_by,
        } => automation::set_triggers(conn, table_id, &triggers, &saved_by, at).await,
        E::RulesSet { table_id, rules } => automation::set_rules(conn, table_id, &rules).await,
    }
}

async fn touch(conn: &mut PgConnection, table_id: Uuid, at: DateTime<Utc>) -> anyhow::Result<()> {
    sqlx::query("UPDATE custom_tables SET updated_at = $2 WHERE id = $1")
        .bind(table_id)
        .bind(at)
        .execute(conn)
        .await?;
    Ok(())
}

async fn update_column(
    conn: &mut PgConnection,
    table_id: Uuid,
    column: &ColumnDef,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE custom_table_columns SET name = $3, type = $4, definition = $5, updated_at = $6
          WHERE table_id = $1 AND key = $2",
    )
    .bind(table_id)
    .bind(&column.key)
    .bind(&column.name)
    .bind(column.column_type.as_str())
    .bind(Json(column))
    .bind(at)
    .execute(&mut *conn)
    .await?;
    touch(conn, table_id, at).await
}

/// Registers a migration. A background one keeps its starting event as its plan and
/// holds the table; any other runs its data change now.
async fn start_migration(
    conn: &mut PgConnection,
    event: &TableEvent,
    migration: &MigrationInfo,
    key: &str,
    kind: &str,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    let table_id = event.table_id();
    sqlx::query(
        "INSERT INTO custom_table_migrations (id, table_id, company_id, column_key, kind, background,
                                              estimated_records, plan, started_at)
         SELECT $1, $2, company_id, $3, $4, $5, $6, $7, $8 FROM custom_tables WHERE id = $2",
    )
    .bind(migration.migration_id)
    .bind(table_id)
    .bind(key)
    .bind(kind)
    .bind(migration.background)
    .bind(migration.estimated_records)
    .bind(migration.background.then_some(Json(event)))
    .bind(at)
    .execute(&mut *conn)
    .await?;
    if migration.background {
        sqlx::query("UPDATE custom_tables SET migration_id = $2 WHERE id = $1")
            .bind(table_id)
            .bind(migration.migration_id)
            .execute(&mut *conn)
            .await?;
        let current = column_definition(conn, table_id, key).await?;
        if let Some(rewrite) = Rewrite::of(event, current.as_ref())? {
            rewrite::prepare(conn, table_id, migration.migration_id, &rewrite).await?;
        }
        return Ok(());
    }
    let rows = run_data_change(conn, event, at).await?;
    finish_migration(conn, migration.migration_id, rows, at).await
}

/// A column's registered definition.
async fn column_definition(
    conn: &mut PgConnection,
    table_id: Uuid,
    key: &str,
) -> anyhow::Result<Option<ColumnDef>> {
    let definition: Option<Json<ColumnDef>> = sqlx::query_scalar(
        "SELECT definition FROM custom_table_columns WHERE table_id = $1 AND key = $2",
    )
    .bind(table_id)
    .bind(key)
    .fetch_optional(conn)
    .await?;
    Ok(definition.map(|d| d.0))
}

/// Completes a background migration by swapping in its rewritten column; returns the
/// rows it covers.
async fn swap(
    conn: &mut PgConnection,
    plan: &TableEvent,
    rewrite: &Rewrite,
    at: DateTime<Utc>,
) -> anyhow::Result<u64> {
    let table_id = plan.table_id();
    rewrite::swap(conn, table_id, rewrite).await?;
    if let TableEvent::ColumnTypeChanged { column, .. } = plan {
        update_column(conn, table_id, column, at).await?;
    }
    record_count(conn, table_id).await
}

async fn record_count(conn: &mut PgConnection, table_id: Uuid) -> anyhow::Result<u64> {
    let rows: i64 = sqlx::query_scalar("SELECT record_count FROM custom_tables WHERE id = $1")
        .bind(table_id)
        .fetch_one(conn)
        .await?;
    Ok(rows as u64)
}

async fn finish_migration(
    conn: &mut PgConnection,
    migration_id: Uuid,
    rows: u64,
    at: DateTime<Utc>,
) -> anyhow::Result<()> {
    sqlx::query(
        "UPDATE custom_table_migrations SET records_migrated = $2, applied_at = $3, completed_at = $3
          WHERE id = $1",
    )
    .bind(migration_id)
    .bind(rows as i64)
    .bind(at)
    .execute(conn)
    .await?;
    Ok(())
}

/// The data change a migration event stands for; returns the rows it rewrote.
async fn run_data_change(
    conn: &mut PgConnection,
    event: &TableEvent,
    at: DateTime<Utc>,
) -> anyhow::Result<u64> {
    match event {
        TableEvent::ColumnAdded {
            table_id,
            column,
            fill: Some(fill),
            ..
        } => {
            let sql = format!(
                "UPDATE {0} SET {1} = {2}($1::jsonb) WHERE {1} IS NULL",
                table_name(*table_id),
                ident(&column.key)?,
                physical::converter(column.column_type)
            );
            let done = sqlx::query(&sql)
                .bind(Json(fill))
                .execute(&mut *conn)
                .await?;
            Ok(done.rows_affected())
        }
        TableEvent::ColumnTypeChanged {
            table_id,
            from,
            column,
            ..
        } => {
            physical::change_type(conn, *table_id, from, column).await?;
            update_column(conn, *table_id, column, at).await?;
            record_count(conn, *table_id).await
        }
        TableEvent::ColumnOptionsRenamed {
            table_id,
            key,
            renames,
            ..
        } => {
            let definition = column_definition(conn, *table_id, key)
                .await?
                .ok_or_else(|| anyhow::anyhow!("option rename of an unknown column {key}"))?;
            let (old, new): (Vec<String>, Vec<String>) = renames.clone().into_iter().unzip();
            let (table, k) = (table_name(*table_id), ident(key)?);
            let sql = if definition.column_type == ColumnType::MultiSelect {
                format!(
                    "UPDATE {table} SET {k} = (SELECT array_agg(x ORDER BY o) FROM
                        (SELECT coalesce(m.new, u.v) AS x, min(u.o) AS o
                           FROM unnest({k}) WITH ORDINALITY AS u(v, o)
                           LEFT JOIN unnest($1::text[], $2::text[]) AS m(old, new) ON m.old = u.v
                          GROUP BY 1) s)
                     WHERE {k} && $1::text[]"
                )
            } else {
                format!(
                    "UPDATE {table} SET {k} = m.new FROM unnest($1::text[], $2::text[]) AS m(old, new)
                      WHERE {k} = m.old"
                )
            };
            let done = sqlx::query(&sql)
                .bind(old)
                .bind(new)
                .execute(&mut *conn)
                .await?;
            Ok(done.rows_affected())
        }
        _ => Ok(0),
    }
}
