-- $1 job, $2 until (the run_at, 0 when not delayed), $3 payload or NULL. One statement: the job
-- and its payload are inserted together or not at all; an existing id changes nothing.
WITH inserted AS (
    INSERT INTO jobs(id, until) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING RETURNING id),
stored AS (
    INSERT INTO leasefence_payloads(job, payload) SELECT id, $3 FROM inserted
    WHERE $3 IS NOT NULL)
SELECT count(*) FROM inserted
