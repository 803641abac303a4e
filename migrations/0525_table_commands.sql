-- Commands of custom tables, kept by the `table_commands` projection: the current
-- version of each, its whole definition as JSON.
CREATE TABLE custom_table_commands
(
    id         uuid PRIMARY KEY,
    company_id uuid        NOT NULL,
    table_id   uuid        NOT NULL,
    scope_kind text        NOT NULL,
    scope_id   uuid        NOT NULL,
    name       text        NOT NULL,
    kind       text        NOT NULL,
    version    bigint      NOT NULL,
    definition jsonb       NOT NULL,
    defined_by text        NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL
);
CREATE INDEX custom_table_commands_table ON custom_table_commands (table_id, created_at, id);
