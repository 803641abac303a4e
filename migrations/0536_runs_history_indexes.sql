-- Two reads of `runs` that scanned a company's whole run history, measured on a
-- `runs` table of 300,000 runs (release, this machine's PostgreSQL 15):
--
-- `GET /runs` (every room the caller sees, newest first) filters by company and
-- orders by (queued_at, id): a parallel sequential scan and a sort of every run,
-- 224-233 ms a page; its exact `total` 209 ms. With this index the page is an index
-- scan of its rows (0.4-1.1 ms) and the total an index-only scan (39-47 ms).
CREATE INDEX runs_company ON runs (company_id, queued_at DESC, id DESC);

-- The on-prem ETA of a queued run is the mean duration of the last 20 completed runs
-- of its resource profile (`runs::query::mean_duration`), read for every
-- submission's answer and every queued run a detail or a list shows: every
-- completed run of the profile was read and sorted, 143-150 ms. With this index it
-- reads the 20 newest entries, 0.13-0.65 ms.
CREATE INDEX runs_recent_completed ON runs (resource_profile, terminal_at DESC)
    WHERE status = 'completed' AND started_at IS NOT NULL;
