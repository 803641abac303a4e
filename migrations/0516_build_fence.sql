-- The build admission fence (the switches projection): one row while raised.
CREATE TABLE build_fences
(
    id                  text PRIMARY KEY,
    retry_after_seconds integer     NOT NULL,
    reason              text        NOT NULL,
    changed_by          text        NOT NULL,
    changed_at          timestamptz NOT NULL
);
