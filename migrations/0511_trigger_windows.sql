-- The window cursor of each schedule trigger (not a read model: rebuilding the
-- read models must not serve a window again): the start of the last window a run
-- was created for. A new trigger starts at the time it was first saved.
CREATE TABLE custom_table_trigger_windows
(
    table_id    uuid        NOT NULL,
    trigger_id  text        NOT NULL,
    last_window timestamptz NOT NULL,
    PRIMARY KEY (table_id, trigger_id)
);
