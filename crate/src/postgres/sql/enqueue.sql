-- $1 job, $2 until (the run_at, 0 when not delayed), $3 payload or NULL, $4 the job's queue, $5
-- its priority. One statement: the job, its place and its payload are inserted together or not at
-- all; an existing id changes nothing. A job inserted notifies the channels of its queue and of every queue (channels.sql),
-- delivered when the transaction commits: idle workers listening there wake up.
WITH inserted AS (
    INSERT INTO jobs(id, until, queue, priority) VALUES ($1, $2, $4, $5)
    ON CONFLICT (id) DO NOTHING RETURNING id),
stored AS (
    INSERT INTO leasefence_payloads(job, payload) SELECT id, $3 FROM inserted
    WHERE $3 IS NOT NULL),
woken AS (
    SELECT pg_notify('leasefence_'
               || md5(length(current_schema())::text || ':' || current_schema() || q), '')
    FROM inserted CROSS JOIN unnest(ARRAY[$4::text, '']) AS q)
SELECT (SELECT count(*) FROM inserted), (SELECT count(*) FROM woken)
