-- The janitor now also takes up attachment uploads left `delete_pending` (a sweep
-- that stopped after marking them, before their bytes went), and checks one key
-- again just before deleting it: the key index covers both states not yet deleted
-- (a read of `active` ones alone still uses it).
CREATE INDEX owned_objects_undeleted_attachments ON owned_objects (key, created_at)
    WHERE kind = 'attachment' AND deletion_state IN ('active', 'delete_pending');
DROP INDEX owned_objects_attachments;
