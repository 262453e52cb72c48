-- $1 before, $2 keep_dead, $3 at most, $4 only_dead: one bounded transaction of prune (section 13). The oldest
-- finished jobs through the partial index, locked (a row another session holds is left for the
-- next run); the floor raised to their highest fence; the jobs deleted, their side rows going
-- with them by the foreign keys' ON DELETE CASCADE. Answers how many were deleted.
WITH picked AS (
    SELECT j.id, j.fence FROM leasefence_order o JOIN jobs j ON j.id = o.id
    WHERE o.finished IS NOT NULL AND o.finished < $1 AND j.done = 1
      AND NOT ($2 AND EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = o.id))
      AND NOT ($4 AND NOT EXISTS (SELECT 1 FROM leasefence_dead d WHERE d.job = o.id))
    ORDER BY o.finished
    LIMIT $3
    FOR UPDATE OF j SKIP LOCKED),
raised AS (
    INSERT INTO leasefence_floor(id, floor) SELECT 1, max(fence) FROM picked HAVING count(*) > 0
    ON CONFLICT (id) DO UPDATE SET floor = greatest(leasefence_floor.floor, EXCLUDED.floor)),
gone AS (
    DELETE FROM jobs WHERE id IN (SELECT id FROM picked) RETURNING id)
SELECT count(*) FROM gone
