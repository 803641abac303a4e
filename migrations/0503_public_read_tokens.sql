-- Public read tokens, kept by the `public_tokens` projection. `lookup_hash` is the
-- SHA-256 of the token id: the public read path finds a token by it, so no index
-- lookup compares a capability byte by byte. A token with a secret keeps only the
-- secret's SHA-256.
CREATE TABLE public_read_tokens
(
    id              uuid PRIMARY KEY,
    lookup_hash     bytea       NOT NULL UNIQUE,
    company_id      uuid        NOT NULL,
    table_id        uuid        NOT NULL,
    view_id         uuid        NOT NULL,
    name            text,
    visible_columns text[],
    read_filter     jsonb,
    allow_query     boolean     NOT NULL,
    rpm             bigint      NOT NULL,
    secretless      boolean     NOT NULL,
    secret_sha256     text,
    valid_until     timestamptz,
    revoked         boolean     NOT NULL DEFAULT false,
    created_by      text        NOT NULL,
    created_at      timestamptz NOT NULL
);
CREATE INDEX public_read_tokens_table ON public_read_tokens (table_id, created_at DESC, id);

-- When each token was last read: operational telemetry, not a domain change, so it
-- is written by the read path (at most once a minute per token) rather than logged,
-- and a projection rebuild keeps it.
CREATE TABLE public_read_token_usage
(
    token_id     uuid PRIMARY KEY,
    last_used_at timestamptz NOT NULL
);

-- The log position of each table's last change (schema or records), kept by the
-- custom tables projection: public reads cache answers against it.
ALTER TABLE custom_tables ADD COLUMN data_version bigint NOT NULL DEFAULT 0;
