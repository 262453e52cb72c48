-- What the schema check finds in the connection's current schema: the schema, the kinds of `jobs`,
-- `leasefence_order` (the side table of an earlier version: present, it is migrated) and
-- `leasefence_next`, whether the trigger is the library's (see below), the kinds of the side tables
-- of section 7, and whether the library's indexes are all there, valid, on their tables. $1 is the
-- body of `leasefence_track` with `%1$I` for the schema (schema.rs, TRACK_BODY).
SELECT current_schema()::text,
(SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'jobs'),
(SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'leasefence_order'),
(SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'leasefence_next'),
-- The trigger: on `jobs`, enabled (not disabled, nor fired for replicas only), before each
-- inserted row (tgtype 7: row, before, insert), with no column list or condition,
-- calling this schema's `leasefence_track`, whose body is the library's, in PL/pgSQL, with no
-- SECURITY DEFINER and no settings of its own.
EXISTS (SELECT 1 FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_proc p ON p.oid = t.tgfoid AND p.pronamespace = n.oid
WHERE n.nspname = current_schema() AND c.relname = 'jobs'
AND t.tgname = 'leasefence_track' AND t.tgenabled IN ('O', 'A') AND t.tgtype = 7
AND t.tgqual IS NULL AND t.tgattr = ''::int2vector
AND p.proname = 'leasefence_track' AND p.pronargs = 0 AND p.prosrc = format($1, current_schema())
AND p.prolang = (SELECT oid FROM pg_language WHERE lanname = 'plpgsql')
AND p.prorettype = 'trigger'::regtype AND NOT p.prosecdef AND p.proconfig IS NULL),
(SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'leasefence_payloads'),
(SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'leasefence_failures'),
(SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'leasefence_dead'),
(SELECT count(*) = 6 FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_class t ON t.oid = i.indrelid
WHERE n.nspname = current_schema() AND i.indisvalid AND i.indisready
AND ((c.relname IN ('leasefence_seq', 'leasefence_next', 'leasefence_queued',
                    'leasefence_finished', 'leasefence_unstamped')
      AND t.relname = 'jobs')
     OR (c.relname = 'leasefence_failures_of_job' AND t.relname = 'leasefence_failures'))),
-- Recurring jobs (section 11): a server set up before them gains the table at the next open.
(SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'leasefence_schedules'),
-- The worker registry: a server set up before it gains the table at the next open.
(SELECT c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'leasefence_workers'),
-- The library's columns of `jobs` (schema.sql), `seq` numbering new rows by itself, and the
-- fence floor's table: a schema from before them gains them.
(SELECT count(*) = 6 FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'jobs' AND NOT a.attisdropped
AND a.attname IN ('queue', 'priority', 'seq', 'enqueued', 'finished', 'base')
AND (a.attname <> 'seq' OR a.attidentity = 'd'))
AND EXISTS (SELECT 1 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE n.nspname = current_schema() AND c.relname = 'leasefence_floor' AND c.relkind = 'r')
