-- Sealing no longer waits for the oldest transaction of the cluster
-- (docs/decisions/0006-sealing-without-a-horizon.md): each pass numbers the committed,
-- unsealed rows it sees in the order they were appended.
CREATE INDEX events_unsealed_order ON events (append_seq) WHERE position IS NULL;
DROP INDEX events_unsealed;

-- When the row was appended (the append's transaction start; rows older than this
-- migration carry its time). The sealing lag on /metrics is the age of the oldest
-- row still unsealed.
ALTER TABLE events ADD COLUMN appended_at timestamptz NOT NULL DEFAULT now();
