-- Reads that scanned a table's whole history, found by reading every query against
-- the indexes (2026-11-29) and measured with EXPLAIN ANALYZE on generated rows on
-- this machine's PostgreSQL 15: before -> after this migration.

-- The contents janitor, once per expired run (up to 500 a pass): whether an active
-- run still shares the inputs file. 300,000 runs: 0.41-0.56 s -> 0.05 ms.
CREATE INDEX runs_active_input ON runs (input_key) WHERE content_state = 'active';

-- The image janitor, every pass: whether an unfinished run pins a version of the
-- environment version. 300,000 runs: 610 ms -> 2.1 ms.
CREATE INDEX runs_unfinished_version ON runs (task_version_id) WHERE terminal_at IS NULL;

-- The trigger pass (every 2 s, once per enabled clock trigger) and the retry route:
-- whether a run of the trigger is pending or running. PostgreSQL does not combine
-- the `pending` and `running` partial indexes for `status IN (...)`. 300,000
-- trigger runs: 53 ms -> 0.03 ms.
CREATE INDEX custom_table_trigger_runs_active
    ON custom_table_trigger_runs (table_id, trigger_id) WHERE status IN ('pending', 'running');

-- The agent janitor's expired and stalled proposals, and a principal's pending ones
-- (every agent submit, cancel and `submitted` call). 300,000 proposals: 77 / 71 ms
-- -> 0.02 / 0.01 ms; a principal with 3,000 proposals: 47 ms -> 0.02 ms.
CREATE INDEX agent_proposals_prepared ON agent_proposals (expires_at) WHERE state = 'prepared';
CREATE INDEX agent_proposals_committing ON agent_proposals (updated_at) WHERE state = 'committing';

-- The upload rate, under the company's upload lock at every upload start: neither
-- table had an index leading with the company. 300,000 objects: 89 ms -> 0.05 ms;
-- 100,000 upload sessions: 26 ms -> 0.05 ms.
CREATE INDEX owned_objects_company_uploads
    ON owned_objects (company_id, created_at) WHERE kind IN ('script', 'task_bundle');
CREATE INDEX context_uploads_company ON context_uploads (company_id, created_at);

-- A keyed agent delivery's valid markers: acknowledged and expired markers are
-- kept. 200,000 markers: 24 ms -> 0.1 ms.
CREATE INDEX custom_table_agent_deliveries_open
    ON custom_table_agent_deliveries (command_id, agent, expires_at) WHERE acknowledged_at IS NULL;

-- A table's callback tokens as moderators list them, without the writeback tokens
-- every run mints. 200,000 tokens: 25 ms -> 0.5 ms.
CREATE INDEX callback_tokens_minted
    ON callback_tokens (table_id, created_at DESC, id DESC) WHERE run_id IS NULL;

-- `GET /environments` lists the company's environments and the curated ones: the
-- `OR` read every company's. 100,000 environments: 11.6 ms -> 0.19 ms.
CREATE INDEX environments_curated ON environments (created_at, id) WHERE owner_kind = 'system_curated';
