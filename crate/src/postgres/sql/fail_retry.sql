-- $1 job, $2 owner, $3 fence, $4 now, $5 retry_at, $6 error. The checks of complete; the job is
-- unowned until retry_at, its fence kept, and the failure recorded in the same statement: one
-- row inserted when the lease matched, none otherwise.
WITH failed AS (
    UPDATE jobs SET owner = NULL, until = $5
    WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4
    RETURNING id, fence)
INSERT INTO leasefence_failures(job, fence, at, error) SELECT id, fence, $4, $6 FROM failed
