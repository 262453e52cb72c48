-- $1 jobs, $2 owners, $3 fences, $4 results (NULL for none; one entry per lease, no job twice),
-- $5 now. complete's UPDATE for every lease at once (the finish time `now` written with it); then, per lease in list order, whether it
-- was completed and the row as the statement found it (owner, until, fence, done, and whether it
-- exists), from which a refused lease's reason is read.
WITH items AS (
    SELECT job, owner, fence, result, ord
    FROM unnest($1::text[], $2::text[], $3::int8[], $4::text[])
        WITH ORDINALITY AS i(job, owner, fence, result, ord)),
completed AS (
    UPDATE jobs j SET result = i.result, done = 1, finished = $5 FROM items i
    WHERE j.id = i.job AND j.owner = i.owner AND j.fence = i.fence AND j.done = 0 AND j.until > $5
    RETURNING i.ord, j.id)
SELECT i.ord, c.ord IS NOT NULL, j.owner, j.until, j.fence, j.done, j.id IS NOT NULL
FROM items i LEFT JOIN completed c ON c.ord = i.ord LEFT JOIN jobs j ON j.id = i.job
ORDER BY i.ord
