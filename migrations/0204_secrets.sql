-- Read models of secret bindings and approvals, kept by the `secrets` projection.
-- They hold no value: a binding names its current value version, whose ciphertext
-- lives in `secret_values` below.
CREATE TABLE secret_bindings
(
    id               uuid PRIMARY KEY,
    company_id       uuid        NOT NULL,
    consumer_scope   text        NOT NULL,
    consumer_id      uuid        NOT NULL,
    task_id          uuid        NOT NULL,
    slot_name        text        NOT NULL,
    generation       bigint      NOT NULL,
    state            text        NOT NULL,
    value_version_id uuid,
    byte_size        bigint,
    version_count    bigint      NOT NULL,
    written_by       text        NOT NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL,
    revoked_at       timestamptz
);
CREATE INDEX secret_bindings_task ON secret_bindings (task_id, created_at, id);
CREATE INDEX secret_bindings_consumer ON secret_bindings (company_id, consumer_scope, consumer_id, created_at, id);
CREATE INDEX secret_bindings_live ON secret_bindings (task_id, slot_name) WHERE state = 'active';

-- One row per approval generation; a newer generation of the same scope and
-- version revokes the older one (`superseded`).
CREATE TABLE secret_approvals
(
    id                  uuid PRIMARY KEY,
    company_id          uuid        NOT NULL,
    consumer_scope      text        NOT NULL,
    consumer_id         uuid        NOT NULL,
    task_id             uuid        NOT NULL,
    task_version_id     uuid        NOT NULL,
    task_version_digest text        NOT NULL,
    slot_names          text[]      NOT NULL,
    source              text        NOT NULL,
    generation          bigint      NOT NULL,
    state               text        NOT NULL,
    revoke_reason       text,
    approved_by         text        NOT NULL,
    created_at          timestamptz NOT NULL,
    revoked_at          timestamptz
);
CREATE INDEX secret_approvals_task ON secret_approvals (task_id, created_at, id);
CREATE INDEX secret_approvals_live ON secret_approvals (task_version_id, consumer_scope, consumer_id) WHERE state = 'active';

-- The secret store: not a read model and never rebuilt from the log. Each value
-- version is AES-256-GCM ciphertext under its own data key, stored wrapped by the
-- key-encryption key `kek_id`; revoking a binding deletes its rows, and with them
-- the only copies of the data keys (crypto-shredding).
CREATE TABLE secret_values
(
    value_version_id     uuid PRIMARY KEY,
    binding_aggregate_id uuid        NOT NULL,
    kek_id               text        NOT NULL,
    wrapped_key          bytea       NOT NULL,
    nonce                bytea       NOT NULL,
    ciphertext           bytea       NOT NULL,
    created_at           timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX secret_values_binding ON secret_values (binding_aggregate_id);

-- What each run pinned per secret slot at submission (never a value).
ALTER TABLE runs ADD COLUMN slot_sources jsonb;
