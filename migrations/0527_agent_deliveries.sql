-- Agent delivery markers of write Commands, kept by the `table_commands`
-- projection: a re-delivery under the same key is reconciled to the marked record
-- until the marker expires or is acknowledged.
CREATE TABLE custom_table_agent_deliveries
(
    id              uuid PRIMARY KEY,
    company_id      uuid        NOT NULL,
    command_id      uuid        NOT NULL,
    agent           text        NOT NULL,
    key             text        NOT NULL,
    record_id       uuid        NOT NULL,
    op              text        NOT NULL,
    marked_at       timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    acknowledged_at timestamptz,
    acknowledged_by text
);
CREATE INDEX custom_table_agent_deliveries_reconciliation
    ON custom_table_agent_deliveries (command_id, agent, marked_at);
