-- Callback tokens, kept by the `public_tokens` projection beside the public read
-- tokens: found by `lookup_hash` (the SHA-256 of the token id); only the SHA-256 of
-- the secret is kept, whose raw 32 bytes key the request signatures.
CREATE TABLE callback_tokens
(
    id            uuid PRIMARY KEY,
    lookup_hash   bytea       NOT NULL UNIQUE,
    company_id    uuid        NOT NULL,
    table_id      uuid        NOT NULL,
    name          text        NOT NULL,
    allowed_ops   text        NOT NULL,
    secret_sha256 text        NOT NULL,
    valid_until   timestamptz,
    revoked       boolean     NOT NULL DEFAULT false,
    created_by    text        NOT NULL,
    created_at    timestamptz NOT NULL
);
CREATE INDEX callback_tokens_table ON callback_tokens (table_id, created_at DESC, id);
