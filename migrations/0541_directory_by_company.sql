-- The directory's lists of one company: the rooms a user manages and the
-- departments they may own resources in (each management listing and the
-- consumer's access, per request), the rooms a non-manager's `GET /runs` may show,
-- the table scopes, and every name a deployment plan can write a principal with.
-- No directory table had an index leading with the company, so each scanned every
-- company's rows. 1,000 companies with 200,000 users, 100,000 rooms, 100,000
-- social media clients and 20,000 departments (EXPLAIN ANALYZE on generated rows,
-- generic plans, this machine's PostgreSQL 15): a user's managed rooms 52 ->
-- 0.15 ms; a company's named principals 33 -> 0.9 ms.
CREATE INDEX users_company ON users (company_id);
CREATE INDEX social_clients_company ON social_clients (company_id);
CREATE INDEX departments_company ON departments (company_id);
CREATE INDEX chatrooms_company ON chatrooms (company_id);
