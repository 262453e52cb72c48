-- $1 job, $2 owner, $3 fence. The lease's holder hands the job back: claimable at once, its
-- fence kept; one row when released, none when the lease did not match (the store then reads
-- why). Idle workers are woken to claim it (notify_freed.sql).
WITH freed AS (
    UPDATE jobs SET owner = NULL, until = 0
    WHERE id = $1 AND owner = $2 AND fence = $3 AND done = 0
    RETURNING id, queue),
-- notify freed
SELECT 1 FROM freed WHERE (SELECT count(*) FROM woken) >= 0
