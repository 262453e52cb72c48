-- After candidates.sql ($1 now, $2 queues, $3 how many candidates of each (queue, priority):
-- at least $6; more let concurrent claimers pass over each other's locked rows). $4 owner,
-- $5 until, $6 how many. claim_next is this statement with $6 = 1.
--
-- The first claimable jobs of those queues in the contract's order (priority, then until, then
-- insertion) that no other transaction is writing, locked (the MATERIALIZED list is computed
-- once, so each is locked once) and claimed in one statement. The outer WHERE repeats the
-- conditions, as claim_next's does; the rows are updated by key (= ANY of the list), so that
-- the plan looks each one up whatever the planner guesses of the list's length. Answers in
-- claim order, each with its payload and its insertion number (the order in which a claimer
-- may wait for rows).
,
picked AS MATERIALIZED (
    SELECT j.id, c.priority, c.until AS at, c.seq FROM candidates c JOIN jobs j ON j.id = c.id
    WHERE j.done = 0 AND j.until <= $1 AND j.fence < 9223372036854775807
    ORDER BY c.priority DESC, c.until, c.seq LIMIT $6
    FOR NO KEY UPDATE OF j SKIP LOCKED),
claimed AS (
    UPDATE jobs SET owner = $4, until = $5, fence = fence + 1
    WHERE id = ANY (ARRAY(SELECT id FROM picked))
    AND done = 0 AND until <= $1 AND fence < 9223372036854775807
    RETURNING id, fence)
SELECT c.id, c.fence, (SELECT payload FROM leasefence_payloads p WHERE p.job = c.id), k.seq
FROM claimed c JOIN picked k ON k.id = c.id
ORDER BY k.priority DESC, k.at, k.seq
