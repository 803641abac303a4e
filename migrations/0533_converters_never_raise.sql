-- Two lenient converters could raise or overflow, which a converter must never do
-- (a replay would stop on the cell): an instant with an offset past 15 hours
-- ("time zone displacement out of range"), and a duration past the interval range
-- ("P999999999W" raised; "P999999999D" wrapped to a negative interval). Durations
-- now take their seconds from the ISO parts in `numeric` and stop short of the
-- interval range (9 * 10^12 seconds; numbers of seconds keep their 10^12), and accept
-- the leading minus of the canonical form the API writes for negative durations
-- ("-PT5S").

CREATE OR REPLACE FUNCTION ct_as_timestamptz(v jsonb) RETURNS timestamptz
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN ct_as_date(v) IS NULL THEN NULL
           WHEN (v #>> '{}') ~ '^.{10}$' THEN (ct_as_date(v)::timestamp AT TIME ZONE 'UTC')
           WHEN (v #>> '{}') ~ '^.{10}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d{1,9})?(Z|[+-](0\d|1[0-5]):[0-5]\d)$'
               THEN (v #>> '{}')::timestamptz
           END
$$;

-- The seconds of an ISO 8601 duration of weeks, or days, hours, minutes and
-- seconds, with an optional leading minus; NULL when `s` has another form.
CREATE FUNCTION ct_iso_seconds(s text) RETURNS numeric
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN s ~ '^-?P(\d{1,9}W|(\d{1,9}D)?(T(\d{1,9}H)?(\d{1,9}M)?(\d{1,9}(\.\d{1,6})?S)?)?)$'
               AND s !~ '(^-?P$|T$)'
               THEN (CASE WHEN s LIKE '-%' THEN -1 ELSE 1 END)
                   * (coalesce(substring(s from '(\d+)W')::numeric, 0) * 604800
                       + coalesce(substring(s from '(\d+)D')::numeric, 0) * 86400
                       + coalesce(substring(s from '(\d+)H')::numeric, 0) * 3600
                       + coalesce(substring(s from 'T(?:\d+H)?(\d+)M')::numeric, 0) * 60
                       + coalesce(substring(s from '([\d.]+)S')::numeric, 0))
           END
$$;

CREATE OR REPLACE FUNCTION ct_as_interval(v jsonb) RETURNS interval
    LANGUAGE sql IMMUTABLE PARALLEL SAFE AS
$$
SELECT CASE
           WHEN jsonb_typeof(v) = 'number' AND abs((v::text)::numeric) < 1e12
               THEN make_interval(secs => (v::text)::double precision)
           WHEN jsonb_typeof(v) = 'string' AND abs(ct_iso_seconds(v #>> '{}')) < 9e12
               THEN make_interval(secs => ct_iso_seconds(v #>> '{}')::double precision)
           END
$$;
