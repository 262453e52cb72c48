-- $1 before, $2 keep_dead, $3 at most, $4 only_dead: one bounded transaction of prune (section
-- 13). First the jobs another program finished without a finish time (an UPDATE of `done`
-- alone; normally none) are stamped with the server's clock: they are pruned by a later run. Then
-- the oldest finished jobs through the partial index, locked (a row another session holds is
-- left for the next run); the floor raised to their highest fence; the jobs deleted, their side
-- rows going with them by the foreign keys' ON DELETE CASCADE. Answers how many were deleted.
WITH stamped AS (
    UPDATE jobs SET finished = extract(epoch FROM clock_timestamp())
    WHERE done <> 0 AND finished IS NULL),
picked AS (
    SELECT j.id, j.fence FROM jobs j
    WHERE j.finished IS NOT NULL AND j.finished < $1 AND j.done = 1
      AND NOT ($2 AND EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = j.id))
      AND NOT ($4 AND NOT EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = j.id))
    ORDER BY j.finished
    LIMIT $3
    FOR UPDATE SKIP LOCKED),
raised AS (
    INSERT INTO leasefence_floor(id, floor) SELECT 1, max(fence) FROM picked HAVING count(*) > 0
    ON CONFLICT (id) DO UPDATE SET floor = greatest(leasefence_floor.floor, EXCLUDED.floor)),
gone AS (
    DELETE FROM jobs WHERE id IN (SELECT id FROM picked) RETURNING id)
SELECT count(*) FROM gone
