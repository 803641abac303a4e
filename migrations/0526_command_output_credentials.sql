-- A run's command-output credential is a callback token bound to the run and to
-- the Command (and its version) it may run.
ALTER TABLE callback_tokens ADD COLUMN command_id uuid;
ALTER TABLE callback_tokens ADD COLUMN command_version bigint;
