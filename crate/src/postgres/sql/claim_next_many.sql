-- $1 owner, $2 until, $3 now, $4 how many. claim_next.sql for up to $4 jobs at once: the first
-- claimable jobs in (until, insertion) order that no other transaction is writing, locked (the
-- MATERIALIZED list is computed once, so each is locked once) and claimed in one statement. The
-- outer WHERE repeats the conditions, as claim_next's does; the rows are updated by key (= ANY of
-- the list), so that the plan looks each one up whatever the planner guesses of the list's
-- length. Answers in claim_next's order, each with its payload and its insertion number (the
-- order in which a claimer may wait for rows).
WITH picked AS MATERIALIZED (
    SELECT j.id, o.until AS at, o.seq FROM leasefence_order o JOIN jobs j ON j.id = o.id
    WHERE o.open AND o.until <= $3
    AND j.done = 0 AND j.until <= $3 AND j.fence < 9223372036854775807
    ORDER BY o.until, o.seq LIMIT $4
    FOR NO KEY UPDATE OF j SKIP LOCKED),
claimed AS (
    UPDATE jobs SET owner = $1, until = $2, fence = fence + 1
    WHERE id = ANY (ARRAY(SELECT id FROM picked))
    AND done = 0 AND until <= $3 AND fence < 9223372036854775807
    RETURNING id, fence)
SELECT c.id, c.fence, (SELECT payload FROM leasefence_payloads p WHERE p.job = c.id), k.seq
FROM claimed c JOIN picked k ON k.id = c.id
ORDER BY k.at, k.seq
