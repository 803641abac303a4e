-- The seal floor (docs/decisions/0013-the-seal-floor.md): an `append_seq` below which
-- no row is unsealed, now or later. Sealing a row updates it out of the partial index
-- `events_unsealed_order`, but the old entry stays in the index until VACUUM removes
-- it, and autovacuum comes for a large log only after a fifth of its rows changed:
-- every pass of the sealer walked the entries of everything sealed since (after a
-- burst of 50,000 appends, 135 index pages and ~0.6 ms per pass). A pass now starts at
-- the floor, which the pump moves up once every row below it is sealed or aborted.
-- One row; written by the pump in the statement that seals, read by every reader of
-- unsealed rows.
CREATE TABLE seal_floor
(
    only_row   boolean PRIMARY KEY DEFAULT true CHECK (only_row),
    append_seq bigint NOT NULL
);
INSERT INTO seal_floor (append_seq) VALUES (0);

-- The floor's argument reads the sequence's last value and relies on each value being
-- handed out by the call that draws it: a backend holding cached values could hand
-- out, later, a value below one already read.
ALTER SEQUENCE events_append_seq_seq CACHE 1;

-- The sealer's read, from the floor: the first `first` unsealed rows at or after
-- `from_seq`, in append order, with their `append_seq`. PL/pgSQL keeps the plan of its
-- query for the session (a SQL function with settings is parsed and planned at every
-- call: a fifth of a single-event cycle's time in the database), and the settings
-- keep it the ordered scan of `events_unsealed_order` that stops at the limit,
-- whatever the statistics say of the backlog (migration 0534).
CREATE FUNCTION events_unsealed_from(first bigint, from_seq bigint)
    RETURNS TABLE (aggregate_type text, aggregate_id text, sequence bigint, event_type text,
                   event_version text, payload text, metadata text, append_seq bigint)
    LANGUAGE plpgsql STABLE
    SET enable_sort = off
AS $$
BEGIN
    RETURN QUERY
    SELECT e.aggregate_type, e.aggregate_id, e.sequence, e.event_type, e.event_version,
           e.payload::text, e.metadata::text, e.append_seq
      FROM events e
     WHERE e.position IS NULL AND e.append_seq >= from_seq
     ORDER BY e.append_seq
     LIMIT first;
END
$$;

-- `events_unsealed` stays: a node of the previous release, still running during a
-- rolling upgrade, seals through it (without the floor, which stays true).
