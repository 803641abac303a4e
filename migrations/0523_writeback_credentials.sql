-- A run's writeback credential is a callback token bound to the run; the
-- moderators' token list leaves it out.
ALTER TABLE callback_tokens ADD COLUMN run_id uuid;
