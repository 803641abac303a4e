//! The client-access step: whether social media clients reach a table, and the
//! passphrase they give first. A document never holds a passphrase's hash: export
//! writes [`REDACTED`], which keeps the passphrase the scope has; turning the
//! passphrase on where none is stored needs a real one (a plan error otherwise); a
//! real passphrase that matches the stored one changes nothing.

use super::attached::{change, managed, rows};
use super::document::{REDACTED, Row};
use super::engine::{Action, Engine};
use crate::error::ApiResult;
use crate::routes::tables::client_access::{hash, matches};
use domain::tables::table::TableCommand;
use uuid::Uuid;

/// Sets client access as the document says (a managed row it no longer holds
/// restores the default: clients reach the table through their grants, without a
/// passphrase).
pub async fn decide(engine: &mut Engine<'_>, table: Uuid, table_ref: &str) -> ApiResult<()> {
    let rows = rows(engine, table_ref, "client_access");
    for (extra, row) in rows.iter().skip(1) {
        engine.error(
            Some(*extra),
            row.reference(),
            "a table has one client_access row",
        );
    }
    let (line, reference, enabled, passphrase) = match rows.first() {
        Some((line, row @ Row::ClientAccess(doc))) => {
            engine.manage(row, "client_access".into(), table);
            let passphrase = doc
                .passphrase_enabled
                .then(|| doc.passphrase.clone().unwrap_or_default());
            (Some(*line), doc.reference.clone(), doc.enabled, passphrase)
        }
        _ => match managed(engine, "client_access", table).into_iter().next() {
            Some((reference, _)) => (None, reference, true, None),
            None => return Ok(()),
        },
    };
    let Some(slot) = engine.slot(table) else {
        return Ok(());
    };
    let state = slot.working.state();
    let stored = state.client_passphrase.clone();
    let mut fields = Vec::new();
    if state.clients_refused == enabled {
        fields.push("enabled".to_string());
    }
    let wanted = match (passphrase, &stored) {
        (None, _) => None,
        (Some(p), Some(current)) if p == REDACTED => Some(current.clone()),
        (Some(p), None) if p == REDACTED => {
            engine.error(line, &reference, "passphrase_enabled needs a real passphrase here: the redacted marker keeps a passphrase only where one is stored");
            return Ok(());
        }
        (Some(p), Some(current)) if matches(p.clone(), current.clone()).await? => {
            Some(current.clone())
        }
        (Some(p), _) => match hash(p).await {
            Ok(hashed) => Some(hashed),
            Err(_) => {
                engine.error(line, &reference, "passphrase must be 8..200 characters");
                return Ok(());
            }
        },
    };
    if wanted != stored {
        fields.push("passphrase".to_string());
    }
    if fields.is_empty() {
        return Ok(());
    }
    let set = TableCommand::SetClientAccess { enabled };
    let lock = TableCommand::SetClientPassphrase {
        passphrase_hash: wanted,
    };
    if engine.run(table, set, line, &reference).await
        && engine.run(table, lock, line, &reference).await
    {
        let mut c = change(
            "client_access",
            Action::Update,
            &reference,
            table_ref,
            "client_access".into(),
        );
        c.fields = fields;
        engine.change(c);
    }
    Ok(())
}
