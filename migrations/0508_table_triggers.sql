-- Table triggers (the custom_tables projection): each table's trigger set as saved,
-- one row per trigger, in the order of the set.
CREATE TABLE custom_table_triggers
(
    table_id   uuid        NOT NULL,
    trigger_id text        NOT NULL,
    position   integer     NOT NULL,
    definition jsonb       NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (table_id, trigger_id)
);
