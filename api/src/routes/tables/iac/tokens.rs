//! The public read token step: each `public_read_token` row publishes a view of
//! its table with a secretless token, checked as the mint route checks it. A token
//! is the managed one of its ref, else an unmanaged secretless token of the same
//! view and name; a changed one is revoked and minted again (its URL changes), and
//! a managed token the document no longer holds is revoked.

use super::attached::{change, managed};
use super::document::{Row, TokenDoc};
use super::engine::{Action, Engine, Loss};
use crate::capability::random_token_id;
use crate::error::{ApiError, ApiResult};
use crate::routes::tables::public_tokens::Publication;
use domain::tables::public_token::{PublicReadToken, PublicTokenCommand, PublicTokenTerms};
use projections::store::Working;
use uuid::Uuid;

/// Mints and revokes the document's tokens of a table.
pub async fn decide(engine: &mut Engine<'_>, table: Uuid, table_ref: &str) -> ApiResult<()> {
    let rows: Vec<(usize, TokenDoc)> = engine
        .document
        .rows
        .iter()
        .filter_map(|(l, r)| match r {
            Row::PublicReadToken(t) if t.table == table_ref => Some((*l, (**t).clone())),
            _ => None,
        })
        .collect();
    // Governed as the document leaves the table (its settings are decided after
    // the tokens): a channel scope column it sets refuses the table's tokens.
    let governed = engine.document.rows.iter().any(|(_, row)| {
        matches!(row, Row::Table(t) if t.reference == table_ref && t.channel_scope_column.is_some())
    });
    let mut kept: Vec<Uuid> = Vec::new();
    for (line, doc) in rows {
        let Some(view_id) = engine
            .resources
            .iter()
            .find(|r| r.resource_type == "view" && r.reference == doc.view && r.table_id == table)
            .and_then(|r| r.resource_id.parse::<Uuid>().ok())
        else {
            engine.error(
                Some(line),
                &doc.reference,
                format!("'{}' is not a view row of this table", doc.view),
            );
            continue;
        };
        let Some(read_filter) = engine.filter(
            table,
            doc.read_filter.as_ref(),
            Some(line),
            &doc.reference,
            true,
        ) else {
            continue;
        };
        let Some(slot) = engine.slot(table) else {
            return Ok(());
        };
        let state = slot.working.state();
        let Some(view) = state.views.iter().find(|v| v.id == view_id).cloned() else {
            continue;
        };
        let publication = Publication {
            view: &view,
            visible_columns: doc.visible_columns.as_deref(),
            read_filter: read_filter.as_ref(),
            rpm: doc.rpm,
            valid_until: doc.valid_until,
            name: doc.name.as_deref(),
        };
        let visible = match publication.check(&state.columns, governed) {
            Ok(visible) => visible,
            Err(e) => {
                engine.error(Some(line), &doc.reference, e.describe());
                continue;
            }
        };
        let managed_id = engine
            .managed("public_read_token", &doc.reference)
            .filter(|r| r.table_id == table)
            .and_then(|r| r.resource_id.parse::<Uuid>().ok());
        let live = |t: &&projections::read_models::public_tokens::query::PublicTokenRow| {
            t.table_id == table && t.secretless && !t.revoked
        };
        let current = engine
            .tokens
            .iter()
            .filter(live)
            .find(|t| Some(t.id) == managed_id)
            .or_else(|| {
                engine.tokens.iter().filter(live).find(|t| {
                    t.view_id == view_id
                        && t.name == doc.name
                        && !kept.contains(&t.id)
                        && !engine.is_managed("public_read_token", table, &t.id.to_string())
                })
            })
            .cloned();
        let same = current.as_ref().is_some_and(|t| {
            t.view_id == view_id
                && t.visible_columns == visible
                && t.read_filter.as_ref().map(|f| &f.0) == read_filter.as_ref()
                && t.allow_query == doc.allow_query
                && t.rpm == doc.rpm
                && t.valid_until == doc.valid_until
        });
        if let (true, Some(token)) = (same, &current) {
            kept.push(token.id);
            engine.manage(
                &Row::PublicReadToken(Box::new(doc.clone())),
                token.id.to_string(),
                table,
            );
            continue;
        }
        if let Some(old) = &current {
            revoke(engine, old.id, table).await?;
        }
        let token_id = random_token_id();
        let terms = PublicTokenTerms {
            token_id,
            company_id: engine.caller.principal.company_id,
            table_id: table,
            view_id,
            name: doc.name.clone(),
            visible_columns: visible,
            read_filter: read_filter.clone(),
            allow_query: doc.allow_query,
            rpm: doc.rpm,
            secretless: true,
            secret_sha256: None,
            valid_until: doc.valid_until,
            created_by: engine.caller.principal.reference(),
        };
        let mut working: Working<PublicReadToken> = Working::fresh(token_id);
        working
            .handle(PublicTokenCommand::Mint(Box::new(terms)))
            .await
            .map_err(|e| crate::error::from_spec(&e))?;
        engine.token_ops.push(working);
        kept.push(token_id);
        engine.manage(
            &Row::PublicReadToken(Box::new(doc.clone())),
            token_id.to_string(),
            table,
        );
        let action = if current.is_some() {
            Action::Replace
        } else {
            Action::Create
        };
        let mut c = change(
            "public_read_token",
            action,
            &doc.reference,
            table_ref,
            token_id.to_string(),
        );
        if current.is_some() {
            c.loses = Some(url_lost());
        }
        engine.change(c);
    }
    for (reference, id) in managed(engine, "public_read_token", table) {
        let Ok(token_id) = id.parse::<Uuid>() else {
            continue;
        };
        let live = engine.tokens.iter().any(|t| t.id == token_id && !t.revoked);
        if kept.contains(&token_id) || !live {
            continue;
        }
        revoke(engine, token_id, table).await?;
        let mut c = change(
            "public_read_token",
            Action::Delete,
            &reference,
            table_ref,
            id,
        );
        c.loses = Some(url_lost());
        engine.change(c);
    }
    Ok(())
}

fn url_lost() -> Loss {
    Loss {
        records: 0,
        what: "the token's public URL stops answering (404)".into(),
    }
}

async fn revoke(engine: &mut Engine<'_>, token_id: Uuid, table: Uuid) -> ApiResult<()> {
    let mut working = engine
        .caller
        .state
        .bus
        .open::<PublicReadToken>(&token_id.to_string())
        .await
        .map_err(|e| ApiError::internal(anyhow::anyhow!(e.to_string())))?;
    working
        .handle(PublicTokenCommand::Revoke { table_id: table })
        .await
        .map_err(|e| crate::error::from_spec(&e))?;
    engine.token_ops.push(working);
    Ok(())
}
