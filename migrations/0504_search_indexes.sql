-- Trigram search indexes (extension pg_trgm, shipped with PostgreSQL's contrib
-- modules and trusted since PostgreSQL 13): every string and text column of a
-- custom table gets `<table>_<key>_q`, a GIN index of its trigrams, so `q`
-- searches and `contains` filters (ILIKE '%...%') read an index instead of every
-- row. The projection creates them for new columns; this adds them to the columns
-- that exist.
CREATE EXTENSION IF NOT EXISTS pg_trgm;

DO
$$
    DECLARE
        c record;
    BEGIN
        FOR c IN SELECT 'ct_' || replace(col.table_id::text, '-', '') AS tbl, col.key
                   FROM custom_table_columns col
                  WHERE col.type IN ('string', 'text')
            LOOP
                IF to_regclass(c.tbl) IS NOT NULL THEN
                    EXECUTE format('CREATE INDEX IF NOT EXISTS %I ON %I USING gin (%I gin_trgm_ops)',
                                   c.tbl || '_' || c.key || '_q', c.tbl, c.key);
                END IF;
            END LOOP;
    END
$$;
