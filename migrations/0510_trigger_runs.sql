-- Who saved a table's triggers: their actions act as that user.
ALTER TABLE custom_table_triggers ADD COLUMN saved_by text NOT NULL DEFAULT '';

-- Trigger runs (the trigger_runs projection), newest first per table.
CREATE TABLE custom_table_trigger_runs
(
    id           uuid PRIMARY KEY,
    company_id   uuid        NOT NULL,
    table_id     uuid        NOT NULL,
    trigger_id   text        NOT NULL,
    status       text        NOT NULL,
    record_id    uuid,
    window_start timestamptz,
    author       text        NOT NULL,
    definition   jsonb       NOT NULL,
    error        text,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL
);
CREATE INDEX custom_table_trigger_runs_table ON custom_table_trigger_runs (table_id, created_at DESC, id);
CREATE INDEX custom_table_trigger_runs_pending ON custom_table_trigger_runs (created_at) WHERE status = 'pending';

-- How far the trigger dispatcher has read the log (not a projection: a rebuild of
-- the read models must never fire a trigger again).
CREATE TABLE custom_table_trigger_dispatch
(
    id       integer PRIMARY KEY CHECK (id = 1),
    position bigint NOT NULL
);
-- It starts at the head: writes before triggers existed fire nothing.
INSERT INTO custom_table_trigger_dispatch (id, position)
SELECT 1, coalesce(max(position), 0) FROM events;
