-- Formula columns compute in `numeric` (exact, never overflowing) and read as the
-- formula's kind through these guards: an integer outside the 64-bit range and a
-- float outside double precision's range read as empty instead of raising an
-- error for the whole page; a float too small for double precision reads as 0.
CREATE FUNCTION ct_formula_integer(value numeric) RETURNS bigint
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS
$$
SELECT CASE
           WHEN value BETWEEN -9223372036854775808 AND 9223372036854775807 THEN value::bigint
           END
$$;

CREATE FUNCTION ct_formula_float(value numeric) RETURNS double precision
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
AS
$$
SELECT CASE
           WHEN abs(value) > 1.7976931348623157e308 THEN NULL
           WHEN abs(value) < 2.2250738585072014e-308 THEN 0::double precision
           ELSE value::double precision
           END
$$;
