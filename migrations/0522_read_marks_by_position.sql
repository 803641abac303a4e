-- "Mark all read" by log position: a notification raised after the mark is unread
-- even when its event time is earlier (marks recorded before keep their time).
ALTER TABLE notification_read_marks ADD COLUMN up_to_position bigint;
