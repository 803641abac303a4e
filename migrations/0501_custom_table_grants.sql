-- Grants and access settings of custom tables (custom part 2), kept by the
-- `custom_tables` projection.

-- Social media clients may reach the table through their grants.
ALTER TABLE custom_tables ADD COLUMN client_access boolean NOT NULL DEFAULT true;
-- The channel scope column of a department table governed by a channel policy.
ALTER TABLE custom_tables ADD COLUMN channel_scope_column text;

-- One row per (table, subject): user, social_client, department, chatroom, default
-- (subject_id nil). `grant_body` is the domain `Grant`.
CREATE TABLE custom_table_grants
(
    table_id     uuid        NOT NULL,
    subject_kind text        NOT NULL,
    subject_id   uuid        NOT NULL,
    grant_body   jsonb       NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (table_id, subject_kind, subject_id)
);
-- Department tables shared to a room (`GET /chatroom/{id}/tables/shared`).
CREATE INDEX custom_table_grants_subject ON custom_table_grants (subject_kind, subject_id);
