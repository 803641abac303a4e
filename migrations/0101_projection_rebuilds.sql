-- Rebuilds in progress, one per projection: where its shadow tables live and the
-- position they reflect (the shadow's own checkpoint, written in the same transaction
-- as the shadow rows). `until_position` is set for a point-in-time build, which stops
-- there and is never swapped in. A row that outlives its process is an interrupted
-- rebuild: `sandboxctl projections rebuild NAME --resume` or `--discard`.
CREATE TABLE projection_rebuilds
(
    name           text PRIMARY KEY,
    shadow_schema  text        NOT NULL,
    position       bigint      NOT NULL DEFAULT 0,
    until_position bigint,
    started_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now()
);
