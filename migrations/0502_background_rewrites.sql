-- A background migration rewrites its column into a shadow column outside the pump
-- (docs/decisions/0006-sealing-without-a-horizon.md, "Our own long transactions"):
-- the rewrite (shadow column, its SQL type, the expression computing the new cell
-- from the row, and its index) is recorded when the migration starts. NULL for
-- migrations started before this change, which rewrite in place at completion.
ALTER TABLE custom_table_migrations ADD COLUMN rewrite jsonb;
