-- The reading a fenced write takes of the library's tables before and after the caller's
-- statements: seven text columns per row (kind, name, up to five values). What each kind reads
-- and why: crate/src/postgres/library_tables.rs.
WITH ns AS (SELECT relnamespace AS oid FROM pg_class WHERE oid = to_regclass('jobs')),
lib AS (SELECT c.oid, c.relname, c.xmin FROM pg_class c
  WHERE (c.relnamespace = (SELECT oid FROM ns) OR c.relnamespace = pg_my_temp_schema())
    AND (c.relname = 'jobs' OR c.relname LIKE 'leasefence\_%'))
SELECT 'relation', relname::text, pg_relation_filenode(oid)::text, xmin::text,
       pg_stat_get_xact_tuples_inserted(oid)::text, pg_stat_get_xact_tuples_updated(oid)::text,
       pg_stat_get_xact_tuples_deleted(oid)::text FROM lib
UNION ALL SELECT 'index', c.relname::text, pg_relation_filenode(c.oid)::text, i.xmin::text,
       c.xmin::text, i.indrelid::text, NULL
  FROM lib JOIN pg_index i ON i.indrelid = lib.oid JOIN pg_class c ON c.oid = i.indexrelid
UNION ALL SELECT 'columns', l.relname::text,
       string_agg(a.attnum::text || ':' || a.xmin::text, ',' ORDER BY a.attnum), NULL, NULL, NULL, NULL
  FROM pg_attribute a JOIN lib l ON l.oid = a.attrelid GROUP BY l.relname
UNION ALL SELECT 'function', p.proname::text, p.oid::text, p.xmin::text, NULL, NULL, NULL
  FROM pg_proc p WHERE p.oid IN (
    SELECT f.oid FROM pg_proc f WHERE f.pronamespace = (SELECT oid FROM ns)
      AND f.proname LIKE 'leasefence\_%'
    UNION SELECT t.tgfoid FROM lib JOIN pg_trigger t ON t.tgrelid = lib.oid)
UNION ALL SELECT 'catalog', r.c::text, pg_stat_get_xact_tuples_inserted(r.c)::text,
       pg_stat_get_xact_tuples_updated(r.c)::text, pg_stat_get_xact_tuples_deleted(r.c)::text,
       NULL, NULL
  FROM unnest(ARRAY[to_regclass('pg_catalog.pg_trigger'), to_regclass('pg_catalog.pg_rewrite'),
       to_regclass('pg_catalog.pg_policy'), to_regclass('pg_catalog.pg_statistic'),
       to_regclass('pg_catalog.pg_statistic_ext'),
       to_regclass('pg_catalog.pg_statistic_ext_data')]) AS r(c) WHERE r.c IS NOT NULL
