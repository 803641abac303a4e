-- The event log. Columns up to `metadata` are postgres-es's table layout, unchanged,
-- so postgres-es can read aggregates from it. The columns after it make the log
-- globally ordered and tamper-evident:
--   txid, append_seq  which transaction appended the row, and in what order inside it;
--   position          the global position, assigned by the sealer in commit-safe order
--                     (NULL until sealed; see docs/decisions/0001-global-log-position.md);
--   chain_hash        SHA-256 over the previous row's hash and this event.
CREATE TABLE events
(
    aggregate_type text                         NOT NULL,
    aggregate_id   text                         NOT NULL,
    sequence       bigint CHECK (sequence >= 0) NOT NULL,
    event_type     text                         NOT NULL,
    event_version  text                         NOT NULL,
    payload        json                         NOT NULL,
    metadata       json                         NOT NULL,
    txid           xid8                         NOT NULL DEFAULT pg_current_xact_id(),
    append_seq     bigint GENERATED ALWAYS AS IDENTITY,
    position       bigint,
    chain_hash     bytea,
    PRIMARY KEY (aggregate_type, aggregate_id, sequence)
);

CREATE UNIQUE INDEX events_position ON events (position);
CREATE INDEX events_unsealed ON events (txid, append_seq) WHERE position IS NULL;

-- Snapshots of long aggregates, written by the command bus every N events. A snapshot
-- of another schema_version is ignored and the aggregate is replayed from events.
CREATE TABLE aggregate_snapshots
(
    aggregate_type text        NOT NULL,
    aggregate_id   text        NOT NULL,
    last_sequence  bigint      NOT NULL,
    schema_version integer     NOT NULL,
    state          jsonb       NOT NULL,
    taken_at       timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (aggregate_type, aggregate_id)
);

-- One row per projection: the position its read model reflects. Written in the same
-- transaction as the read-model rows.
CREATE TABLE projection_checkpoints
(
    name          text PRIMARY KEY,
    position      bigint      NOT NULL DEFAULT 0,
    updated_at    timestamptz NOT NULL DEFAULT now(),
    failing_since timestamptz,
    last_error    text
);
