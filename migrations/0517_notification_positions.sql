-- Where in the log each notification was raised: the live stream's cursor (the
-- time in an event's metadata need not follow the log's order).
ALTER TABLE notifications ADD COLUMN position bigint NOT NULL DEFAULT 0;
CREATE INDEX notifications_company_position ON notifications (company_id, position);
