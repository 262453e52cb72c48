-- $1 jobs, $2 owners, $3 fences (one entry per lease, no job twice), $4 now, $5 until. renew's
-- UPDATE for every lease at once; then, per lease in list order, whether it was renewed and the
-- row as the statement found it (owner, until, fence, done, and whether it exists), from which a
-- refused lease's reason is read.
WITH items AS (
    SELECT job, owner, fence, ord
    FROM unnest($1::text[], $2::text[], $3::int8[]) WITH ORDINALITY AS i(job, owner, fence, ord)),
renewed AS (
    UPDATE jobs j SET until = $5 FROM items i
    WHERE j.id = i.job AND j.owner = i.owner AND j.fence = i.fence AND j.done = 0 AND j.until > $4
    RETURNING i.ord)
SELECT i.ord, r.ord IS NOT NULL, j.owner, j.until, j.fence, j.done, j.id IS NOT NULL
FROM items i LEFT JOIN renewed r ON r.ord = i.ord LEFT JOIN jobs j ON j.id = i.job
ORDER BY i.ord
