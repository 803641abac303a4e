-- Retention notices: when a run's submitter was told its contents expire (the
-- janitor warns once, a day ahead), and which company pins which environment
-- through a live task version (`curated_environment_published` goes to them).
ALTER TABLE runs ADD COLUMN content_expiring_at timestamptz;

CREATE TABLE notification_task_pins
(
    task_version_id uuid PRIMARY KEY,
    company_id      uuid NOT NULL,
    environment_id  uuid NOT NULL
);
CREATE INDEX notification_task_pins_environment ON notification_task_pins (environment_id);

-- The janitor's search for images past their retention.
CREATE INDEX task_versions_environment_version ON task_versions (environment_version_id);
