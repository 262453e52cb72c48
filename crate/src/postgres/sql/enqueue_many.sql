-- $1 jobs, $2 untils (the run_at, 0 when not delayed), $3 payloads (NULL for none), one entry per
-- item of the list. One statement: the first item of each id is inserted with its payload, in list
-- order (so the trigger numbers them in that order), unless the id exists; a later item of the
-- same id is never inserted. Answers the positions (from 1) of the items inserted.
WITH items AS (
    SELECT job, until, payload, ord
    FROM unnest($1::text[], $2::float8[], $3::text[]) WITH ORDINALITY AS i(job, until, payload, ord)),
firsts AS (
    SELECT DISTINCT ON (job) job, until, payload, ord FROM items ORDER BY job, ord),
inserted AS (
    INSERT INTO jobs(id, until) SELECT job, until FROM firsts ORDER BY ord
    ON CONFLICT (id) DO NOTHING RETURNING id),
stored AS (
    INSERT INTO leasefence_payloads(job, payload)
    SELECT f.job, f.payload FROM firsts f JOIN inserted i ON i.id = f.job
    WHERE f.payload IS NOT NULL)
SELECT f.ord FROM firsts f JOIN inserted i ON i.id = f.job
