-- $1 job, $2 owner, $3 fence, $4 now, $5 error. The checks of complete; done with no result, the
-- failure recorded and the dead mark set in the same statement: one row when the lease matched.
-- The job's finish time (prune, section 13) is this `now`.
WITH failed AS (
    UPDATE jobs SET done = 1, finished = $4
    WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0 AND until > $4
    RETURNING id, fence),
recorded AS (
    INSERT INTO leasefence_failures(job, fence, at, error) SELECT id, fence, $4, $5 FROM failed)
INSERT INTO leasefence_dead(job, fence, at) SELECT id, fence, $4 FROM failed
ON CONFLICT (job) DO UPDATE SET fence = EXCLUDED.fence, at = EXCLUDED.at
