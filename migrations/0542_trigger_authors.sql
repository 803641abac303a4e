-- A trigger's actions act as its author: the user who saved its current
-- definition. Until now the projection made whoever saved a table's trigger set
-- the author of every trigger in it, so a moderator re-saving the set (adding a
-- trigger of their own, or a deployment plan touching one) lent their rights to
-- the triggers they left unchanged. The projection now keeps an unchanged
-- trigger's author; this re-derives the authors of existing triggers from the
-- log the same way: for each trigger, the saver of the latest `TriggersSet` that
-- added it or changed its definition.
WITH sets AS (
    SELECT e.aggregate_id AS table_id, e.sequence,
           (e.payload -> 'TriggersSet' -> 'triggers')::jsonb AS triggers,
           e.payload -> 'TriggersSet' ->> 'saved_by' AS saved_by,
           lag((e.payload -> 'TriggersSet' -> 'triggers')::jsonb)
               OVER (PARTITION BY e.aggregate_id ORDER BY e.sequence) AS before
      FROM events e
     WHERE e.aggregate_type = 'custom_table' AND e.event_type = 'TriggersSet'),
changes AS (
    SELECT s.table_id, s.sequence, t ->> 'id' AS trigger_id, s.saved_by
      FROM sets s
           CROSS JOIN LATERAL jsonb_array_elements(s.triggers) t
     WHERE s.saved_by IS NOT NULL AND s.saved_by <> ''
       AND NOT EXISTS (SELECT 1 FROM jsonb_array_elements(coalesce(s.before, '[]')) b WHERE b = t)),
authors AS (
    SELECT DISTINCT ON (table_id, trigger_id) table_id, trigger_id, saved_by
      FROM changes
     ORDER BY table_id, trigger_id, sequence DESC)
UPDATE custom_table_triggers c
   SET saved_by = a.saved_by
  FROM authors a
 WHERE c.table_id::text = a.table_id AND c.trigger_id = a.trigger_id AND c.saved_by <> a.saved_by;
