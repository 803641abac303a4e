-- The sandbox runs a trigger run submitted (it is `running` until they end).
ALTER TABLE custom_table_trigger_runs ADD COLUMN sandbox_run_ids uuid[] NOT NULL DEFAULT '{}';
CREATE INDEX custom_table_trigger_runs_running ON custom_table_trigger_runs (created_at) WHERE status = 'running';

-- The values a `date_column_reached` trigger fired for, per record (not a read
-- model: rebuilding the read models, or deleting run logs, must not re-arm a value).
-- `value` is the instant the column's value stands for (a date: its midnight UTC).
CREATE TABLE custom_table_trigger_fired_values
(
    table_id   uuid        NOT NULL,
    trigger_id text        NOT NULL,
    record_id  uuid        NOT NULL,
    value      timestamptz NOT NULL,
    PRIMARY KEY (table_id, trigger_id, record_id, value)
);
