-- The contents janitor reads runs whose contents passed (or near) their company's
-- retention. Retention differs per company, so one range of `terminal_at`
-- (`runs_retention`) cannot bound the read, and each pass walked every run whose
-- contents are active: 214 ms (expire) and 483 ms (warn) a pass at 200,000 active
-- runs. It now reads company by company, each a range of this index up to the
-- company's own bound.
CREATE INDEX runs_company_active_contents ON runs (company_id, terminal_at)
    WHERE content_state = 'active' AND terminal_at IS NOT NULL;

-- Nothing reads runs by `terminal_at` alone any more.
DROP INDEX runs_retention;
