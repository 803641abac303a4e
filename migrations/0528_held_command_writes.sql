-- A held write comes from a callback token or a write Command (`token_id` names
-- the one or the other).
ALTER TABLE custom_table_staged_changes ADD COLUMN source text NOT NULL DEFAULT 'callback_token';
