-- `settings.agent_writes_via_commands_only` of a custom table: raw agent writes are
-- refused, and no writeback output policy may target it.
ALTER TABLE custom_tables ADD COLUMN agent_writes_via_commands_only boolean NOT NULL DEFAULT false;
