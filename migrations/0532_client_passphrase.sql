-- The client-access passphrase (custom-tables.md section 2): whether social media
-- clients must give one before they reach a table, and the clients that did.
ALTER TABLE custom_tables ADD COLUMN client_passphrase boolean NOT NULL DEFAULT false;

CREATE TABLE custom_table_client_unlocks
(
    table_id    uuid        NOT NULL,
    client_id   uuid        NOT NULL,
    unlocked_at timestamptz NOT NULL,
    PRIMARY KEY (client_id, table_id)
);
