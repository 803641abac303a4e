-- Runner release approvals (the switches projection): the operator's last decision
-- on each release; a release without a row is approved only when it is the one the
-- service builds with.
CREATE TABLE runner_releases
(
    release    text PRIMARY KEY,
    approved   boolean     NOT NULL,
    reason     text        NOT NULL,
    changed_by text        NOT NULL,
    changed_at timestamptz NOT NULL
);
