-- Attachment files are content-addressed per table: every upload of the same bytes
-- is an object of its own under one key. Cells find a file by key; the janitor
-- finds the files no record holds any more.
CREATE INDEX owned_objects_attachments ON owned_objects (key, created_at)
    WHERE kind = 'attachment' AND deletion_state = 'active';

-- Which live records hold which attachment file (maintained with the records of
-- tables that have attachment columns): the write path accepts a file a record
-- already holds, and the janitor removes files nobody holds.
CREATE TABLE custom_table_blob_holders
(
    table_id  uuid NOT NULL,
    blob_id   text NOT NULL,
    record_id uuid NOT NULL,
    PRIMARY KEY (table_id, blob_id, record_id)
);
CREATE INDEX custom_table_blob_holders_record ON custom_table_blob_holders (table_id, record_id);
