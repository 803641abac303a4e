-- The unique index on `position` held an entry for every unsealed row too (NULL is
-- indexed). When the planner's statistics were older than a large backlog (a bulk
-- import appended faster than autoanalyze ran), it answered the sealer's
-- "unsealed rows in append order, first 5,000" from this index: every unsealed row,
-- then a sort, on every pass (1 s per pass at a backlog of 1,000,000 rows, so the
-- backlog drained in quadratic time). Indexing sealed rows only leaves the partial
-- index `events_unsealed_order` as the one index that can answer for unsealed rows,
-- already in order. Every reader of positions states `position IS NOT NULL` or
-- compares `position`, which implies it, so they keep using this index.
CREATE UNIQUE INDEX events_position_sealed ON events (position) WHERE position IS NOT NULL;
DROP INDEX events_position;
ALTER INDEX events_position_sealed RENAME TO events_position;

-- The sealer's read of the first unsealed rows in append order. With statistics that
-- underestimate the backlog (none yet, or older than a bulk import), the planner
-- still preferred fetching every unsealed row through a bitmap of the partial index
-- and sorting them to an ordered scan of that index stopping at the limit. Only
-- the ordered scan is right here whatever the backlog, so the function plans its
-- query without sorts.
CREATE FUNCTION events_unsealed(first bigint)
    RETURNS TABLE (aggregate_type text, aggregate_id text, sequence bigint, event_type text,
                   event_version text, payload text, metadata text)
    LANGUAGE sql STABLE
    SET enable_sort = off
AS $$
SELECT e.aggregate_type, e.aggregate_id, e.sequence, e.event_type, e.event_version,
       e.payload::text, e.metadata::text
  FROM events e
 WHERE e.position IS NULL
 ORDER BY e.append_seq
 LIMIT first
$$;
