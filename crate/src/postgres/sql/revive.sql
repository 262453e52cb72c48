-- $1 job, $2 now. Dead jobs only (done and marked): claimable from now, the fence kept, the mark
-- removed and the finish time cleared in the same statement; one row when revived. A second reviser waits for the first's
-- row lock, then finds done = 0 and changes nothing. Idle workers are woken (notify_freed.sql).
WITH freed AS (
    UPDATE jobs SET done = 0, owner = NULL, until = $2, finished = NULL
    WHERE id = $1 AND done = 1 AND EXISTS (SELECT 1 FROM leasefence_dead WHERE job = $1)
    RETURNING id, queue),
-- notify freed
DELETE FROM leasefence_dead WHERE job IN (SELECT id FROM freed)
AND (SELECT count(*) FROM woken) >= 0
