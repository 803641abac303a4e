-- A submitter's runs, newest first: a room's runs of one principal (the agent's
-- `submitted` tool) or of one API key (a restricted key's list), and `GET /runs`
-- with `submitted_by_me`. Each walked the room's or the company's whole history
-- when the submitter had few runs. The queries now test the submitter in
-- statements of their own, so their generic plans use these indexes. 300,000 runs
-- of one company in two rooms, a submitter with 100 of them / none (EXPLAIN
-- ANALYZE on generated rows, generic plans, this machine's PostgreSQL 15), before
-- -> after: a room's runs of a principal 38-72 / 165 ms -> 0.2 / 0.03 ms; of a key
-- 10-17 ms -> 0.06 ms; `GET /runs?submitted_by_me=true` page 24 / 161 ms -> 0.13 /
-- 0.06 ms, its total 389 / 378 ms -> 0.5 / 0.04 ms.
CREATE INDEX runs_submitter ON runs (principal_id, queued_at DESC, id DESC);
CREATE INDEX runs_api_key ON runs (api_key_id, queued_at DESC, id DESC) WHERE api_key_id IS NOT NULL;
