-- Chain epochs: epoch 2 commits a task version's scrubbable fields by digest (so a
-- scrub can remove their text from the log, domain::tasks::scrub). A log sealed
-- before it is re-linked once from its first task version event; the row keeps
-- where that started and the head as it was, for auditors holding older hashes.
CREATE TABLE chain_epochs
(
    epoch                  integer PRIMARY KEY,
    from_position          bigint      NOT NULL,
    previous_head_position bigint      NOT NULL,
    previous_head_hash     bytea       NOT NULL,
    started_at             timestamptz NOT NULL DEFAULT now()
);
