-- The operator's kill switches (the switches projection): `scope` is `global` or a
-- company id; a scope without a row is on.
CREATE TABLE sandbox_switches
(
    scope      text PRIMARY KEY,
    company_id uuid,
    enabled    boolean     NOT NULL,
    reason     text        NOT NULL,
    changed_by text        NOT NULL,
    changed_at timestamptz NOT NULL
);
