-- Read models of custom tables, kept by the `custom_tables` projection
-- (docs/decisions/0004-custom-table-storage.md).
--
-- The registry below describes every live custom table. Each custom table's records
-- live in a physical table of their own, `ct_<table id hex>`, with one typed column
-- per stored column (`col_<hex>`), created and altered by the projection inside its
-- transaction. The registry is what lets a rebuild find and recreate them.
CREATE TABLE custom_tables
(
    id           uuid PRIMARY KEY,
    company_id   uuid        NOT NULL,
    scope_kind   text        NOT NULL,
    scope_id     uuid        NOT NULL,
    name         text        NOT NULL,
    description  text,
    created_by   text        NOT NULL,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    record_count bigint      NOT NULL,
    -- The background migration holding the table, if any.
    migration_id uuid
);
CREATE INDEX custom_tables_scope ON custom_tables (company_id, scope_kind, scope_id);

CREATE TABLE custom_table_columns
(
    table_id   uuid        NOT NULL,
    key        text        NOT NULL,
    position   integer     NOT NULL,
    name       text        NOT NULL,
    type       text        NOT NULL,
    -- The whole column definition (domain `ColumnDef`).
    definition jsonb       NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (table_id, key)
);

CREATE TABLE custom_table_views
(
    table_id   uuid        NOT NULL,
    id         uuid        NOT NULL,
    name       text        NOT NULL,
    definition jsonb       NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (table_id, id)
);

-- Every data migration of a column (default fill, type change, option rename).
CREATE TABLE custom_table_migrations
(
    id                uuid PRIMARY KEY,
    table_id          uuid        NOT NULL,
    company_id        uuid        NOT NULL,
    column_key        text        NOT NULL,
    kind              text        NOT NULL,
    background        boolean     NOT NULL,
    estimated_records bigint      NOT NULL,
    -- Rows the projection rewrote; NULL until it applied the migration.
    records_migrated  bigint,
    -- The starting event of a background migration, applied at its completion.
    plan              jsonb,
    started_at        timestamptz NOT NULL,
    applied_at        timestamptz,
    completed_at      timestamptz
);

-- Lenient conversions from JSON to each storage type. The projection writes every
-- cell through them and type changes convert with them, so a value that does not fit
-- the column's current type becomes an empty cell instead of failing the projection;
-- they never raise, which keeps a replay of the log deterministic.
CREATE FUNCTION ct_as_text(v jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE jsonb_typeof(v)
           WHEN 'string' THEN v #>> '{}'
           WHEN 'number' THEN v::text
           WHEN 'boolean' THEN v::text
           WHEN 'object' THEN v::text
           WHEN 'array' THEN (SELECT string_agg(CASE jsonb_typeof(e) WHEN 'string' THEN e #>> '{}' ELSE e::text END,
                                                ', ' ORDER BY o)
                              FROM jsonb_array_elements(v) WITH ORDINALITY AS x(e, o))
           END
$$;

CREATE FUNCTION ct_as_bigint(v jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN jsonb_typeof(v) = 'number' AND abs((v::text)::numeric) < 9e18
               THEN round((v::text)::numeric)::bigint
           WHEN jsonb_typeof(v) = 'string' AND (v #>> '{}') ~ '^\s*[-+]?\d{1,18}(\.\d+)?\s*$'
               THEN round(trim(v #>> '{}')::numeric)::bigint
           WHEN jsonb_typeof(v) = 'boolean' THEN CASE WHEN v = 'true'::jsonb THEN 1 ELSE 0 END
           END
$$;

CREATE FUNCTION ct_as_float8(v jsonb) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN jsonb_typeof(v) = 'number' AND abs((v::text)::numeric) < 1e300
               THEN (v::text)::double precision
           WHEN jsonb_typeof(v) = 'string'
               AND length(v #>> '{}') < 300
               AND (v #>> '{}') ~ '^\s*[-+]?(\d+(\.\d*)?|\.\d+)([eE][-+]?\d{1,2})?\s*$'
               THEN trim(v #>> '{}')::double precision
           WHEN jsonb_typeof(v) = 'boolean' THEN CASE WHEN v = 'true'::jsonb THEN 1 ELSE 0 END
           END
$$;

CREATE FUNCTION ct_as_boolean(v jsonb) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN jsonb_typeof(v) = 'boolean' THEN v = 'true'::jsonb
           WHEN jsonb_typeof(v) = 'number' THEN (v::text)::numeric <> 0
           WHEN jsonb_typeof(v) = 'string' THEN CASE
                                                    WHEN lower(trim(v #>> '{}')) IN ('true', 'yes', 'y', 't', '1') THEN true
                                                    WHEN lower(trim(v #>> '{}')) IN ('false', 'no', 'n', 'f', '0') THEN false
               END
           END
$$;

-- `YYYY-MM-DD` (or the date part of a datetime) when it names a real day.
CREATE FUNCTION ct_as_date(v jsonb) RETURNS date
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN jsonb_typeof(v) = 'string'
               AND (v #>> '{}') ~ '^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])($|T)'
               AND substr(v #>> '{}', 1, 4)::int >= 1
               AND substr(v #>> '{}', 9, 2)::int <= extract(day from
                                                            (make_date(substr(v #>> '{}', 1, 4)::int,
                                                                       substr(v #>> '{}', 6, 2)::int, 1)
                                                                + interval '1 month' - interval '1 day'))
               THEN substr(v #>> '{}', 1, 10)::date
           END
$$;

-- RFC 3339 (`YYYY-MM-DDTHH:MM:SS[.ffffff](Z|±HH:MM)`) or a date (midnight UTC).
CREATE FUNCTION ct_as_timestamptz(v jsonb) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN ct_as_date(v) IS NULL THEN NULL
           WHEN (v #>> '{}') ~ '^.{10}$' THEN (ct_as_date(v)::timestamp AT TIME ZONE 'UTC')
           WHEN (v #>> '{}') ~ '^.{10}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$'
               THEN (v #>> '{}')::timestamptz
           END
$$;

-- ISO 8601 durations with days, hours, minutes and seconds, or a number of seconds.
CREATE FUNCTION ct_as_interval(v jsonb) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN jsonb_typeof(v) = 'number' AND abs((v::text)::numeric) < 1e12
               THEN make_interval(secs => (v::text)::double precision)
           WHEN jsonb_typeof(v) = 'string'
               AND (v #>> '{}') ~ '^P(\d{1,9}W|(\d{1,9}D)?(T(\d{1,9}H)?(\d{1,9}M)?(\d{1,9}(\.\d{1,6})?S)?)?)$'
               AND (v #>> '{}') !~ '(^P$|T$)'
               THEN make_interval(secs => extract(epoch from (v #>> '{}')::interval)::double precision)
           END
$$;

CREATE FUNCTION ct_as_text_array(v jsonb) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN jsonb_typeof(v) = 'array' THEN (SELECT array_agg(ct_as_text(e) ORDER BY o)
                                                FROM jsonb_array_elements(v) WITH ORDINALITY AS x(e, o)
                                                WHERE ct_as_text(e) IS NOT NULL)
           WHEN jsonb_typeof(v) = 'string' THEN (SELECT array_agg(trim(p) ORDER BY o)
                                                 FROM unnest(string_to_array(v #>> '{}', ',')) WITH ORDINALITY AS x(p, o)
                                                 WHERE trim(p) <> '')
           WHEN jsonb_typeof(v) IN ('number', 'boolean') THEN ARRAY [v::text]
           END
$$;

CREATE FUNCTION ct_is_uuid(s text) RETURNS boolean
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT s ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
$$;

CREATE FUNCTION ct_as_uuid_array(v jsonb) RETURNS uuid[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT (SELECT array_agg(lower(t)::uuid ORDER BY o)
        FROM unnest(ct_as_text_array(v)) WITH ORDINALITY AS x(t, o)
        WHERE ct_is_uuid(t))
$$;

-- A user or social client id: a UUID string.
CREATE FUNCTION ct_as_id_text(v jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE WHEN ct_is_uuid(ct_as_text(v)) THEN lower(ct_as_text(v)) END
$$;

-- A tagged principal: `user:<uuid>`, `smc:<uuid>` or `room:<uuid>`.
CREATE FUNCTION ct_as_principal(v jsonb) RETURNS text
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN ct_as_text(v) ~* '^(user|smc|room):[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
               THEN lower(ct_as_text(v))
           END
$$;

CREATE FUNCTION ct_as_jsonb(v jsonb) RETURNS jsonb
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE WHEN jsonb_typeof(v) = 'null' THEN NULL ELSE v END
$$;

-- The values of `vals` that are among `opts`, first occurrence order, without
-- duplicates; NULL when none is left.
CREATE FUNCTION ct_keep_options(vals text[], opts text[]) RETURNS text[]
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT (SELECT array_agg(v ORDER BY o)
        FROM (SELECT v, min(o) AS o FROM unnest(vals) WITH ORDINALITY AS u(v, o) WHERE v = ANY (opts) GROUP BY v) x)
$$;
