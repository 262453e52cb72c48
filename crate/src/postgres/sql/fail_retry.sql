-- $1 job, $2 owner, $3 fence, $4 now, $5 retry_at, $6 error. The checks of complete; the job is
-- unowned until retry_at, its fence kept, and the failure recorded in the same statement: one
-- row inserted when the lease matched, none otherwise. Idle workers are woken, so they sleep
-- until the retry time rather than their next poll (notify_freed.sql).
WITH freed AS (
    UPDATE jobs SET owner = NULL, until = $5
    WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4
    RETURNING id, fence, queue),
-- notify freed
INSERT INTO leasefence_failures(job, fence, at, error) SELECT id, fence, $4, $6 FROM freed
WHERE (SELECT count(*) FROM woken) >= 0
