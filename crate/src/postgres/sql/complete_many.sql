-- $1 jobs, $2 owners, $3 fences, $4 results (NULL for none; one entry per lease, no job twice),
-- $5 now. complete's UPDATE for every lease at once (the finish time `now` written with it);
-- then, per lease in list order, whether it was completed and, for a refused one only, the row as
-- the statement found it (owner, until, fence, done, and whether it exists), from which its
-- reason is read. That row is one probe of the primary key per refused lease (LATERAL with
-- LIMIT 1, which the planner keeps as it is): a plain join let it scan every job on a table
-- without statistics yet (docs/bench/postgres.md).
WITH items AS (
    SELECT job, owner, fence, result, ord
    FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[])
        WITH ORDINALITY AS i(job, owner, fence, result, ord)),
completed AS (
    UPDATE jobs j SET result = i.result, done = 1, finished = $5 FROM items i
    WHERE j.id = i.job AND j.owner = i.owner AND j.fence = i.fence AND j.done = 0 AND j.until > $5
    RETURNING i.ord, j.id)
SELECT i.ord, c.ord IS NOT NULL, j.owner, j.until, j.fence, j.done, j.id IS NOT NULL
FROM items i LEFT JOIN completed c ON c.ord = i.ord
LEFT JOIN LATERAL (SELECT id, owner, until, fence, done FROM jobs
                   WHERE id = i.job AND c.ord IS NULL LIMIT 1) j ON true
ORDER BY i.ord
