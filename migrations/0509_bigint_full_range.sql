-- Integer cells take the whole 64-bit range: a written integer of 9e18 or more
-- used to read as empty (the number branch stopped at 9e18). Rounding happens
-- before the range test, so no fraction can round past the range and raise.
CREATE OR REPLACE FUNCTION ct_as_bigint(v jsonb) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN jsonb_typeof(v) = 'number'
               AND round((v::text)::numeric) BETWEEN -9223372036854775808 AND 9223372036854775807
               THEN round((v::text)::numeric)::bigint
           WHEN jsonb_typeof(v) = 'string' AND (v #>> '{}') ~ '^\s*[-+]?\d{1,18}(\.\d+)?\s*$'
               THEN round(trim(v #>> '{}')::numeric)::bigint
           WHEN jsonb_typeof(v) = 'boolean' THEN CASE WHEN v = 'true'::jsonb THEN 1 ELSE 0 END
           END
$$;
