-- After candidates.sql ($1 now, $2 queues, $3 how many candidates of each (queue, priority):
-- at least $6; more let concurrent claimers pass over each other's locked rows). $4 owner,
-- $5 until, $6 how many. claim_next is this statement with $6 = 1.
--
-- The first claimable jobs of those queues in the contract's order (priority, then until, then
-- insertion) that no other transaction is writing, locked and claimed in one statement. The
-- shape keeps the plan from depending on the planner's guesses (docs/decisions/
-- postgres-claim-statement.md): the candidates are put in the claim order once (`ordered`, a
-- MATERIALIZED list, read back in that order), then each job is looked up by its key and tried
-- for its lock in a correlated subquery, one candidate at a time, until $6 are locked (no ORDER
-- BY above the lock, so no candidate after the last one taken is locked or even read). A join of
-- the candidates with `jobs` instead let the planner scan `jobs` once per candidate list on a
-- table whose statistics lagged (a claim cost O(jobs): 50 claims/s on 100,000 jobs). The lock's
-- subquery repeats the conditions, and PostgreSQL rechecks them on the newest version of the row
-- once it is locked; the lock is held to the commit, so the UPDATE joins the picked rows by key
-- and nothing else. Repeating the conditions there gave the planner a scan of every open job by
-- `until` (leasefence_next) to filter by key, and it took it on a table without statistics yet:
-- 57 ms instead of 1 for 64 of 2,000 jobs (docs/bench/postgres.md). Answers in claim
-- order, each with its payload, its insertion number (the order in which a claimer may wait
-- for rows) and the fence it started at (its attempts count from there).
,
ordered AS MATERIALIZED (
    SELECT id, priority, until, seq FROM candidates ORDER BY priority DESC, until, seq),
picked AS MATERIALIZED (
    SELECT c.id, c.priority, c.until AS at, c.seq FROM ordered c
    WHERE c.id = (SELECT j.id FROM jobs j
                  WHERE j.id = c.id AND j.done = 0 AND j.until <= $1
                    AND j.fence < 9223372036854775807
                  FOR NO KEY UPDATE SKIP LOCKED)
    LIMIT $6),
claimed AS (
    UPDATE jobs j SET owner = $4, until = $5, fence = j.fence + 1
    FROM picked k WHERE j.id = k.id
    RETURNING j.id, j.fence, j.base, k.priority, k.at, k.seq)
SELECT c.id, c.fence, (SELECT payload FROM leasefence_payloads p WHERE p.job = c.id), c.seq,
       c.base
FROM claimed c
ORDER BY c.priority DESC, c.at, c.seq
