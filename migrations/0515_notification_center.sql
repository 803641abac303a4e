-- The notification center (the notifications projection): who submitted each run
-- (run notifications go to them), and what each user has read.
CREATE TABLE notification_runs
(
    run_id         uuid PRIMARY KEY,
    company_id     uuid NOT NULL,
    chatroom_id    uuid NOT NULL,
    task_id        uuid NOT NULL,
    principal_type text NOT NULL,
    principal_id   uuid NOT NULL
);

CREATE TABLE notification_reads
(
    user_id         uuid NOT NULL,
    notification_id uuid NOT NULL,
    PRIMARY KEY (user_id, notification_id)
);

CREATE TABLE notification_read_marks
(
    user_id uuid PRIMARY KEY,
    until   timestamptz NOT NULL
);

CREATE INDEX notifications_company_newest ON notifications (company_id, created_at DESC, id DESC);
