-- $1 owner, $2 until, $3 now, $4 how many. claim_next.sql for up to $4 jobs at once: the first
-- claimable jobs in (until, insertion) order that no other transaction is writing, locked (the
-- MATERIALIZED list is computed once, so each is locked once) and claimed in one statement. The
-- outer WHERE repeats the conditions, as claim_next's does. Answers in claim_next's order, each
-- with its payload and its insertion number (the order in which a claimer may wait for rows).
WITH picked AS MATERIALIZED (
    SELECT j.id, o.until AS at, o.seq FROM leasefence_order o JOIN jobs j ON j.id = o.id
    WHERE o.open AND o.until <= $3
    AND j.done = 0 AND j.until <= $3 AND j.fence < 9223372036854775807
    ORDER BY o.until, o.seq LIMIT $4
    FOR NO KEY UPDATE OF j SKIP LOCKED),
claimed AS (
    UPDATE jobs SET owner = $1, until = $2, fence = jobs.fence + 1
    FROM picked WHERE jobs.id = picked.id
    AND jobs.done = 0 AND jobs.until <= $3 AND jobs.fence < 9223372036854775807
    RETURNING jobs.id, jobs.fence, picked.at, picked.seq)
SELECT c.id, c.fence, p.payload, c.seq
FROM claimed c LEFT JOIN leasefence_payloads p ON p.job = c.id
ORDER BY c.at, c.seq
