-- $1 jobs, $2 owners, $3 fences (one entry per lease, no job twice), $4 now, $5 until. renew's
-- UPDATE for every lease at once; then, per lease in list order, whether it was renewed and, for
-- a refused one only, the row as the statement found it (owner, until, fence, done, and whether
-- it exists), from which its reason is read: one probe of the primary key (as complete_many.sql).
WITH items AS (
    SELECT job, owner, fence, ord
    FROM unnest($1::text[], $2::text[], $3::int8[]) WITH ORDINALITY AS i(job, owner, fence, ord)),
renewed AS (
    UPDATE jobs j SET until = $5 FROM items i
    WHERE j.id = i.job AND j.owner = i.owner AND j.fence = i.fence AND j.done = 0 AND j.until > $4
    RETURNING i.ord)
SELECT i.ord, r.ord IS NOT NULL, j.owner, j.until, j.fence, j.done, j.id IS NOT NULL
FROM items i LEFT JOIN renewed r ON r.ord = i.ord
LEFT JOIN LATERAL (SELECT id, owner, until, fence, done FROM jobs
                   WHERE id = i.job AND r.ord IS NULL LIMIT 1) j ON true
ORDER BY i.ord
