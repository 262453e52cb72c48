-- $1 jobs, $2 untils (the run_at, 0 when not delayed), $3 payloads (NULL for none), $4 queues,
-- $5 priorities, one entry per item of the list. One statement: the first item of each id is
-- inserted with its queue, priority and payload, in list order (so their insertion numbers follow
-- it), unless the id exists; a later item of the same id is never inserted. Answers the positions
-- (from 1) of the items inserted. The queues of the jobs inserted, and every queue, are notified
-- once each (channels.sql), at commit.
WITH items AS (
    SELECT job, until, payload, queue, priority, ord
    FROM unnest($1::text[], $2::float8[], $3::text[], $4::text[], $5::int8[])
         WITH ORDINALITY AS i(job, until, payload, queue, priority, ord)),
firsts AS (
    SELECT DISTINCT ON (job) job, until, payload, queue, priority, ord FROM items
    ORDER BY job, ord),
inserted AS (
    INSERT INTO jobs(id, until, queue, priority)
    SELECT job, until, queue, priority FROM firsts ORDER BY ord
    ON CONFLICT (id) DO NOTHING RETURNING id),
stored AS (
    INSERT INTO leasefence_payloads(job, payload)
    SELECT f.job, f.payload FROM firsts f JOIN inserted i ON i.id = f.job
    WHERE f.payload IS NOT NULL),
woken AS (
    SELECT pg_notify('leasefence_'
               || md5(length(current_schema())::text || ':' || current_schema() || c.q), '')
    FROM (SELECT f.queue FROM firsts f JOIN inserted i ON i.id = f.job
          UNION SELECT '' WHERE EXISTS (SELECT 1 FROM inserted)) AS c(q))
SELECT f.ord FROM firsts f JOIN inserted i ON i.id = f.job
WHERE (SELECT count(*) FROM woken) >= 0
